package shared_test

import (
	"context"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/heapscope/heapscope/examples"
	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/shared"
	"github.com/heapscope/heapscope/internal/store/storetest"
	"github.com/heapscope/heapscope/internal/testserver"
	"github.com/heapscope/heapscope/internal/testserver/pgtest"
	"github.com/heapscope/heapscope/internal/testserver/s3test"
)

func TestMain(m *testing.M) {
	if name := os.Getenv(exampleEnv); name != "" {
		// The ingest benchmarks' target: this binary serving an example.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := examples.Main(ctx, name, os.Args[1:], os.Getenv, os.Stderr)
		stop()
		os.Exit(code)
	}
	testserver.Main(m, pgtest.StopShared, s3test.StopShared)
}

// open opens a shared store over a fresh database and bucket of the test
// binary's PostgreSQL and S3 servers, closed when the test ends.
func open(t *testing.T) *shared.Store { return openTwins(t, 1)[0] }

// openTwins opens n shared stores over one fresh database and bucket,
// each with its own cache (the watchers of a fleet), closed when the
// test ends.
func openTwins(t *testing.T, n int) []*shared.Store {
	t.Helper()
	return openStores(t, make([]twin, n)...)
}

// TestShared_Conformance holds the shared store to the conformance suite
// every backend passes.
func TestShared_Conformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
}

func TestParseObjects(t *testing.T) {
	tests := []struct {
		raw     string
		want    shared.Objects
		wantErr string
	}{
		{raw: "s3://profiles", want: shared.Objects{Bucket: "profiles"}},
		{raw: "s3://profiles/heapscope/prod/", want: shared.Objects{Bucket: "profiles", Prefix: "heapscope/prod"}},
		{raw: "s3://profiles?endpoint=http://127.0.0.1:7070&region=eu-west-1",
			want: shared.Objects{Bucket: "profiles", Endpoint: "http://127.0.0.1:7070", Region: "eu-west-1", PathStyle: true}},
		{raw: "s3://profiles?endpoint=https://s3.example.com&path_style=false",
			want: shared.Objects{Bucket: "profiles", Endpoint: "https://s3.example.com"}},
		{raw: "gs://profiles", wantErr: "want s3://BUCKET"},
		{raw: "s3:///prefix", wantErr: "want s3://BUCKET"},
		{raw: "s3://b?endpoint=127.0.0.1:7070", wantErr: "not an http(s) URL"},
		{raw: "s3://b?path_style=yes please", wantErr: "path_style"},
		{raw: "s3://b?acl=public", wantErr: `unknown parameter "acl"`},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := shared.ParseObjects(tt.raw)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseObjects: %+v, %v; want an error saying %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseObjects: %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestShared_twoStoresOneIndex opens two stores over one database and
// bucket, each with a cache of its own (two watchers, or a watcher and a
// server): what one commits the other reads, runs and all; and migrating
// again changes nothing.
func TestShared_twoStoresOneIndex(t *testing.T) {
	srv := s3test.Shared(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	o := shared.Options{Postgres: pgtest.Shared(t).NewDatabase(t),
		Objects: shared.Objects{Bucket: srv.NewBucket(t), Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true}}
	var stores [2]*shared.Store
	for i := range stores {
		o.CacheDir = t.TempDir()
		s, err := shared.Open(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	e := storetest.Commit(t, stores[0], store.KindRun, "svc", storetest.Leaky, store.Entry{Time: storetest.At(0), Labels: map[string]string{"env": "prod"}})
	got, ok, err := stores[1].EntryAt(e.Path)
	if err != nil || !ok || got.ID != e.ID || got.Labels["env"] != "prod" {
		t.Fatalf("the other store's EntryAt: %+v, %v, %v", got, ok, err)
	}
	dir, err := stores[1].RunDir(t.Context(), got)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(dir, stores[1].RunRoot()) {
		t.Errorf("the other store's copy is at %s, outside its cache %s", dir, stores[1].RunRoot())
	}
	if _, err := rundir.Read(dir); err != nil {
		t.Errorf("the run downloaded by the other store: %v", err)
	}
	if _, _, err := stores[1].MarkBeforeOOM("svc", storetest.At(60)); err != nil {
		t.Fatal(err)
	}
	// The mark is in the bucket's entry.json too: a third cache reads it.
	o.CacheDir = t.TempDir()
	third, err := shared.Open(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	dir, err = third.RunDir(t.Context(), got)
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := store.ReadRecord(dir); err != nil || !rec.BeforeOOM {
		t.Errorf("entry.json in the bucket after MarkBeforeOOM: %+v, %v", rec, err)
	}
}

// TestShared_retainRemovesObjectsAndOrphans checks what retention leaves
// in the bucket: nothing of a removed run, and nothing of a commit that
// died between its upload and its index once that is old.
func TestShared_retainRemovesObjectsAndOrphans(t *testing.T) {
	s := open(t)
	srv := s3test.Shared(t)
	old := storetest.Commit(t, s, store.KindRun, "svc", storetest.Leaky, store.Entry{Time: storetest.At(0)})
	kept := storetest.Commit(t, s, store.KindRun, "svc", storetest.Leaky, store.Entry{Time: storetest.At(30)})
	bucket, prefix := s.Objects().Bucket, s.Objects().Prefix
	// An orphan: a name taken and an object uploaded, no entry.
	orphan := "runs/svc-000000000000/20260301T110000Z"
	if _, err := s.Pool().Exec(t.Context(), "INSERT INTO names (path, taken) VALUES ($1, now() - interval '2 hours')", orphan); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client().PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket),
		Key: aws.String(prefix + "/" + orphan + "/result.json"), Body: strings.NewReader("{}")}); err != nil {
		t.Fatal(err)
	}
	removed, err := s.Retain(store.Retention{MaxAge: 20 * time.Minute, Now: storetest.At(40)})
	if err != nil || removed != 1 {
		t.Fatalf("Retain: %d, %v; want the old run removed", removed, err)
	}
	keys := listKeys(t, srv.Client(), bucket, prefix)
	for _, k := range keys {
		if strings.Contains(k, old.Path) || strings.Contains(k, orphan) {
			t.Errorf("%s is still in the bucket", k)
		}
	}
	if !slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, kept.Path+"/") }) {
		t.Errorf("the kept run's objects are gone: %v", keys)
	}
	var names int
	if err := s.Pool().QueryRow(t.Context(), "SELECT COUNT(*) FROM names").Scan(&names); err != nil || names != 1 {
		t.Errorf("%d names left (%v), want the kept run's", names, err)
	}
}

func listKeys(t *testing.T, c *s3.Client, bucket, prefix string) []string {
	t.Helper()
	out, err := c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix + "/")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// TestShared_cacheBound checks that the cache keeps within its bound and
// downloads a run evicted from it again. Runs read are not spared here
// (no grace) for the bound to bite at once.
func TestShared_cacheBound(t *testing.T) {
	srv := s3test.Shared(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	cache := t.TempDir()
	s, err := shared.Open(t.Context(), shared.Options{Postgres: pgtest.Shared(t).NewDatabase(t), CacheDir: cache, CacheBytes: 1,
		Objects: shared.Objects{Bucket: srv.NewBucket(t), Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	shared.SetCacheGrace(s, 0)
	var es []store.Entry
	for m := range 3 {
		es = append(es, storetest.Commit(t, s, store.KindRun, "svc", storetest.Leaky, store.Entry{Time: storetest.At(m)}))
	}
	for round := range 2 {
		for _, e := range es {
			dir, err := s.RunDir(t.Context(), e)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if _, err := rundir.Read(dir); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if n, _ := storetest.TreeBytes(cache); n > 2*e.Bytes {
				t.Errorf("round %d: the cache holds %d bytes, bound 1 byte but the run read (%d)", round, n, e.Bytes)
			}
		}
	}
}

// TestOpen_refusesWhatItCannotReach checks the one-line errors of a store
// that cannot be opened: nothing listening, a bucket that is not there,
// credentials the server refuses.
func TestOpen_refusesWhatItCannotReach(t *testing.T) {
	srv := s3test.Shared(t)
	db := pgtest.Shared(t).NewDatabase(t)
	good := shared.Objects{Bucket: srv.NewBucket(t), Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true}
	tests := []struct {
		name     string
		postgres string
		objects  shared.Objects
		secret   string
		want     string
	}{
		{"no database server", "postgres://heapscope@127.0.0.1:1/heapscope?sslmode=disable", good, srv.SecretKey, "connection refused"},
		{"no such bucket", db, shared.Objects{Bucket: "not-there", Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true}, srv.SecretKey, "bucket s3://not-there"},
		{"wrong secret", db, good, "not-the-secret", "bucket s3://" + good.Bucket},
		{"no object server", db, shared.Objects{Bucket: "b", Endpoint: "http://127.0.0.1:1", PathStyle: true}, srv.SecretKey, "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
			t.Setenv("AWS_SECRET_ACCESS_KEY", tt.secret)
			t.Setenv("AWS_MAX_ATTEMPTS", "1")
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			s, err := shared.Open(ctx, shared.Options{Postgres: tt.postgres, Objects: tt.objects, CacheDir: t.TempDir()})
			if err == nil {
				s.Close()
				t.Fatal("Open: no error")
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("Open: %q, want one line saying %q", msg, tt.want)
			}
		})
	}
}

func FuzzParseObjects(f *testing.F) {
	for _, seed := range []string{"s3://b", "s3://b/p/q?endpoint=http://127.0.0.1:9000&region=r&path_style=false", "s3://", "gs://b", "s3://b?x=%zz"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		o, err := shared.ParseObjects(raw)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error on more than one line: %q", err)
			}
			return
		}
		if o.Bucket == "" || strings.HasPrefix(o.Prefix, "/") || strings.HasSuffix(o.Prefix, "/") {
			t.Errorf("ParseObjects(%q) = %+v: no bucket, or a prefix with a slash at an end", raw, o)
		}
		if o.Endpoint != "" && !strings.HasPrefix(o.Endpoint, "http") {
			t.Errorf("ParseObjects(%q) = %+v: an endpoint that is not http(s)", raw, o)
		}
	})
}
