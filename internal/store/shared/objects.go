package shared

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"
)

// Objects says where a shared store keeps its run directories: a bucket
// of an S3-compatible object store. Credentials come from the AWS SDK's
// usual places (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile,
// a role of the instance or the pod).
type Objects struct {
	// Bucket is the bucket's name; it must exist.
	Bucket string
	// Prefix is where in the bucket, without a trailing slash.
	Prefix string
	// Endpoint is the object store's URL (http://127.0.0.1:7070, a
	// MinIO, a Ceph gateway); empty, AWS's endpoint for the region.
	Endpoint string
	// Region is the bucket's region; us-east-1 when empty and the
	// environment names none.
	Region string
	// PathStyle addresses the bucket in the path, not the host name:
	// what most S3-compatible servers need.
	PathStyle bool
}

// ParseObjects reads an objects URL:
//
//	s3://BUCKET[/PREFIX][?endpoint=URL&region=R&path_style=true]
//
// path_style defaults to true when an endpoint is given.
func ParseObjects(raw string) (Objects, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Objects{}, fmt.Errorf("objects URL %q: %w", raw, err)
	}
	if u.Scheme != "s3" || u.Host == "" {
		return Objects{}, fmt.Errorf("objects URL %q: want s3://BUCKET[/PREFIX][?endpoint=URL&region=R]", raw)
	}
	q := u.Query()
	o := Objects{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/"), Endpoint: q.Get("endpoint"), Region: q.Get("region")}
	o.PathStyle = o.Endpoint != ""
	if ps := q.Get("path_style"); ps != "" {
		if o.PathStyle, err = strconv.ParseBool(ps); err != nil {
			return Objects{}, fmt.Errorf("objects URL %q: path_style=%q is not true or false", raw, ps)
		}
	}
	for k := range q {
		if k != "endpoint" && k != "region" && k != "path_style" {
			return Objects{}, fmt.Errorf("objects URL %q: unknown parameter %q (endpoint, region, path_style)", raw, k)
		}
	}
	if o.Endpoint != "" {
		if eu, err := url.Parse(o.Endpoint); err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" {
			return Objects{}, fmt.Errorf("objects URL %q: endpoint %q is not an http(s) URL", raw, o.Endpoint)
		}
	}
	return o, nil
}

// String names the bucket and prefix.
func (o Objects) String() string {
	s := "s3://" + o.Bucket
	if o.Prefix != "" {
		s += "/" + o.Prefix
	}
	if o.Endpoint != "" {
		s += " at " + o.Endpoint
	}
	return s
}

// bucket is the store's view of its bucket.
type bucket struct {
	client *s3.Client
	o      Objects
	// transport carries the requests; close closes its idle connections.
	transport *http.Transport
}

func (b *bucket) close() { b.transport.CloseIdleConnections() }

// uploads bounds the objects a commit or a download moves at once.
const uploads = 8

func openBucket(ctx context.Context, o Objects) (*bucket, error) {
	if o.Bucket == "" {
		return nil, errors.New("no bucket")
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("the object store's configuration: %w", err)
	}
	// The store's own transport (with what the configuration set on the
	// SDK's, such as AWS_CA_BUNDLE), so that Close can close its
	// connections.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if bc, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok {
		tr = bc.GetTransport()
	}
	// A watcher commits many runs at once, each uploading several files:
	// keep their connections rather than open new ones.
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 128
	cfg.HTTPClient = &http.Client{Transport: tr}
	if o.Region != "" {
		cfg.Region = o.Region
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		so.UsePathStyle = o.PathStyle
	})
	b := &bucket{client: client, o: o, transport: tr}
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(o.Bucket)}); err != nil {
		b.close()
		return nil, fmt.Errorf("bucket %s: %w", o, err)
	}
	return b, nil
}

// key returns the object key of a file of a run.
func (b *bucket) key(runPath, name string) string {
	return path.Join(b.o.Prefix, runPath, name)
}

// prefix returns the key prefix of a run's objects, with its slash.
func (b *bucket) prefix(runPath string) string {
	return path.Join(b.o.Prefix, runPath) + "/"
}

// putDir uploads every file under dir as the run runPath's objects.
func (b *bucket) putDir(ctx context.Context, dir, runPath string) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(uploads)
	for _, f := range files {
		g.Go(func() error {
			rel, err := filepath.Rel(dir, f)
			if err != nil {
				return err
			}
			// Streamed from the file: a seekable body the SDK can hash
			// and send again on a retry without holding it in memory.
			in, err := os.Open(f)
			if err != nil {
				return err
			}
			defer in.Close()
			info, err := in.Stat()
			if err != nil {
				return err
			}
			key := b.key(runPath, filepath.ToSlash(rel))
			_, err = b.client.PutObject(gctx, &s3.PutObjectInput{Bucket: aws.String(b.o.Bucket), Key: aws.String(key),
				Body: in, ContentLength: aws.Int64(info.Size())})
			if err != nil {
				return fmt.Errorf("upload %s: %w", key, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// list returns the keys under a run's prefix, relative to it.
func (b *bucket) list(ctx context.Context, runPath string) ([]string, error) {
	prefix := b.prefix(runPath)
	var out []string
	p := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{Bucket: aws.String(b.o.Bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, strings.TrimPrefix(aws.ToString(o.Key), prefix))
		}
	}
	return out, nil
}

// getDir downloads a run's objects into dir.
func (b *bucket) getDir(ctx context.Context, runPath, dir string) error {
	names, err := b.list(ctx, runPath)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("no objects under %s", b.prefix(runPath))
	}
	// Every name first: a bad one must not leave downloads running into
	// a directory the caller removes.
	for _, name := range names {
		if !validName(name) {
			return fmt.Errorf("object %s%s: not a file name of a run", b.prefix(runPath), name)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(uploads)
	for _, name := range names {
		g.Go(func() error {
			key := b.key(runPath, name)
			out, err := b.client.GetObject(gctx, &s3.GetObjectInput{Bucket: aws.String(b.o.Bucket), Key: aws.String(key)})
			if err != nil {
				return fmt.Errorf("download %s: %w", key, err)
			}
			defer out.Body.Close()
			dst := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			f, err := os.Create(dst)
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, out.Body); err != nil {
				f.Close()
				return fmt.Errorf("download %s: %w", key, err)
			}
			return f.Close()
		})
	}
	return g.Wait()
}

// validName says whether an object's name under a run's prefix is a file
// path that stays inside the run's directory.
func validName(name string) bool {
	return name != "" && !strings.HasPrefix(name, "/") && path.Clean(name) == name && name != "." &&
		name != ".." && !strings.HasPrefix(name, "../")
}

// deleteRuns deletes the objects of runs, a thousand keys per request.
func (b *bucket) deleteRuns(ctx context.Context, runPaths []string) error {
	var keys []types.ObjectIdentifier
	flush := func() error {
		if len(keys) == 0 {
			return nil
		}
		out, err := b.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b.o.Bucket),
			Delete: &types.Delete{Objects: keys, Quiet: aws.Bool(true)}})
		keys = keys[:0]
		if err != nil {
			return fmt.Errorf("delete objects: %w", err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("delete %s: %s (%d objects not deleted)", aws.ToString(e.Key), aws.ToString(e.Message), len(out.Errors))
		}
		return nil
	}
	for _, rp := range runPaths {
		names, err := b.list(ctx, rp)
		if err != nil {
			return err
		}
		for _, n := range names {
			keys = append(keys, types.ObjectIdentifier{Key: aws.String(b.key(rp, n))})
			if len(keys) == 1000 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}
