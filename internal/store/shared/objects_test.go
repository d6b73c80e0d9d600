package shared_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/shared"
	"github.com/heapscope/heapscope/internal/store/storetest"
	"github.com/heapscope/heapscope/internal/testserver/pgtest"
	"github.com/heapscope/heapscope/internal/testserver/s3test"
)

// twin says how one of the stores openStores opens differs from the
// others: the object server's endpoint (a proxy in front of the test
// binary's versitygw) and its cache directory. Zero fields: versitygw
// itself, a cache of its own.
type twin struct {
	endpoint string
	cache    string
}

// openStores opens a store for each twin over one fresh database and
// bucket, closed when the test ends.
func openStores(t *testing.T, twins ...twin) []*shared.Store {
	t.Helper()
	srv := s3test.Shared(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	bucket := srv.NewBucket(t)
	db := pgtest.Shared(t).NewDatabase(t)
	var ss []*shared.Store
	for _, tw := range twins {
		o := shared.Objects{Bucket: bucket, Prefix: "heapscope", Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true}
		if tw.endpoint != "" {
			o.Endpoint = tw.endpoint
		}
		if tw.cache == "" {
			tw.cache = t.TempDir()
		}
		s, err := shared.Open(context.Background(), shared.Options{Postgres: db, Objects: o, CacheDir: tw.cache})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		})
		ss = append(ss, s)
	}
	return ss
}

// proxyObjects starts a proxy in front of the test binary's versitygw
// that calls hook with each request before passing it on, and returns
// its endpoint. The request keeps the Host header it was signed with.
func proxyObjects(t *testing.T, hook func(*http.Request)) string {
	t.Helper()
	target, err := url.Parse(s3test.Shared(t).Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hook(r)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// isDownload says whether r reads an object (not a listing, not the
// bucket's HEAD).
func isDownload(r *http.Request) bool {
	return r.Method == http.MethodGet && !r.URL.Query().Has("list-type") && strings.Count(strings.Trim(r.URL.Path, "/"), "/") > 0
}

// TestCommit_largeFileRoundTrips commits a run with a file of tens of
// megabytes and reads it back whole; the commit streams the file from
// disk, allocating far less than its size.
func TestCommit_largeFileRoundTrips(t *testing.T) {
	twins := openStores(t, twin{}, twin{})
	s, other := twins[0], twins[1]
	p, err := s.Begin(store.KindRun, "svc")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Abandon()
	storetest.WriteFixture(t, storetest.Leaky, p.Dir())
	const size = 24 << 20
	big := make([]byte, size)
	rand.Read(big)
	if err := os.WriteFile(filepath.Join(p.Dir(), "trace.out"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e, err := p.Commit(p.Dir(), store.Entry{Time: storetest.At(0)})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
		t.Errorf("the commit of a %d MiB file allocated %d MiB: it holds the file in memory", size>>20, alloc>>20)
	}
	// Read through the second store: from the bucket, not this one's cache.
	dir, err := other.RunDir(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "trace.out"))
	if err != nil || !bytes.Equal(got, big) {
		t.Errorf("the large file read back: %d bytes (%v), equal %v; want %d", len(got), err, bytes.Equal(got, big), len(big))
	}
}

// TestRunDir_refusesABadObjectNameBeforeDownloading checks that a run
// holding an object whose name is no file of a run (a directory marker,
// which some tools make) is refused before any of its objects is
// downloaded, so that no download is left writing into the cache after
// the refusal; and that the run reads once that object is gone.
func TestRunDir_refusesABadObjectNameBeforeDownloading(t *testing.T) {
	var downloads atomic.Int32
	proxy := proxyObjects(t, func(r *http.Request) {
		if isDownload(r) {
			downloads.Add(1)
		}
	})
	ss := openStores(t, twin{}, twin{endpoint: proxy})
	writer, reader := ss[0], ss[1]
	e := storetest.Commit(t, writer, store.KindRun, "svc", storetest.Leaky, store.Entry{Time: storetest.At(0)})
	client, bucket := s3test.Shared(t).Client(), aws.String(writer.Objects().Bucket)
	prefix := writer.Objects().Prefix + "/" + e.Path + "/"
	put := func(key string) {
		t.Helper()
		if _, err := client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: bucket, Key: aws.String(key), Body: strings.NewReader("")}); err != nil {
			t.Fatal(err)
		}
	}
	// More files than a download moves at once, all listed before the
	// marker: downloads started name by name would wait for one of them
	// to end before reaching it.
	for i := range 10 {
		put(fmt.Sprintf("%sextra-%02d.txt", prefix, i))
	}
	marker := prefix + "zz/"
	put(marker)
	if _, err := reader.RunDir(t.Context(), e); err == nil || !strings.Contains(err.Error(), "not a file name of a run") {
		t.Fatalf("RunDir of a run with the object %s: %v, want it refused", marker, err)
	}
	if n := downloads.Load(); n != 0 {
		t.Errorf("%d objects downloaded for a run refused", n)
	}
	var left []string
	filepath.WalkDir(reader.RunRoot(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	if len(left) != 0 {
		t.Errorf("files left in the cache after the refusal: %v", left)
	}

	if _, err := client.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String(marker)}); err != nil {
		t.Fatal(err)
	}
	dir, err := reader.RunDir(t.Context(), e)
	if err != nil {
		t.Fatalf("RunDir once the marker is gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "extra-09.txt")); err != nil || downloads.Load() == 0 {
		t.Errorf("the run read once the marker is gone: %v, %d downloads", err, downloads.Load())
	}
}

// TestMarkBeforeOOM_processesSharingACache checks that processes sharing
// one cache directory rewrite a run's entry.json at once without
// tripping over each other's temporary files.
func TestMarkBeforeOOM_processesSharingACache(t *testing.T) {
	cache := t.TempDir()
	ss := openStores(t, twin{cache: cache}, twin{cache: cache})
	e := storetest.Commit(t, ss[0], store.KindRun, "svc", storetest.Leaky, store.Entry{Time: storetest.At(0)})
	var wg sync.WaitGroup
	for i, s := range ss {
		for range 4 {
			wg.Go(func() {
				for range 10 {
					if got, ok, err := s.MarkBeforeOOM("svc", storetest.At(5)); err != nil || !ok || got.ID != e.ID {
						t.Errorf("store %d: MarkBeforeOOM: %+v, %v, %v; want %s marked", i, got.Path, ok, err, e.Path)
						return
					}
				}
			})
		}
	}
	wg.Wait()
}
