package shared_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/shared"
	"github.com/heapscope/heapscope/internal/store/storetest"
	"github.com/heapscope/heapscope/internal/testserver/pgtest"
	"github.com/heapscope/heapscope/internal/testserver/s3test"
)

// TestRetain_byOneWatcherAtATime checks that watchers retaining by size
// at once free the excess once between them, not once each.
func TestRetain_byOneWatcherAtATime(t *testing.T) {
	ss := openTwins(t, 4)
	var each int64
	for m := range 12 {
		each = storetest.Commit(t, ss[0], store.KindRun, "svc", storetest.Leaky, store.Entry{Time: storetest.At(m)}).Bytes
	}
	total, err := ss[0].Size()
	if err != nil {
		t.Fatal(err)
	}
	// Two runs over the bound.
	r := store.Retention{MaxBytes: total - 2*each}
	var wg sync.WaitGroup
	removed := make([]int, len(ss))
	for i, s := range ss {
		wg.Go(func() {
			n, err := s.Retain(r)
			if err != nil {
				t.Errorf("watcher %d: Retain: %v", i, err)
			}
			removed[i] = n
		})
	}
	wg.Wait()
	sum := 0
	for _, n := range removed {
		sum += n
	}
	if sum != 2 {
		t.Errorf("four watchers retaining at once removed %v runs, %d in all; want the 2 over the bound", removed, sum)
	}
}

// plantOrphan leaves what a commit interrupted between its upload and its
// index leaves, two hours ago: the name taken, an object under it, no
// entry. It returns the object's key.
func plantOrphan(t *testing.T, s *shared.Store, path string) string {
	t.Helper()
	if _, err := s.Pool().Exec(t.Context(), "INSERT INTO names (path, taken) VALUES ($1, now() - interval '2 hours')", path); err != nil {
		t.Fatal(err)
	}
	key := s.Objects().Prefix + "/" + path + "/result.json"
	if _, err := s3test.Shared(t).Client().PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(s.Objects().Bucket),
		Key: aws.String(key), Body: strings.NewReader("{}")}); err != nil {
		t.Fatal(err)
	}
	return key
}

// TestRetain_spareAnOrphanBeingIndexed checks that the orphan sweep
// passes over an old name a commit is indexing (its entry's reference
// holds the name's row), without waiting for it, and removes it once
// the commit has gone.
func TestRetain_spareAnOrphanBeingIndexed(t *testing.T) {
	s := open(t)
	srv := s3test.Shared(t)
	bucket, prefix := s.Objects().Bucket, s.Objects().Prefix
	orphan := "runs/svc-000000000000/20260301T110000Z"
	key := plantOrphan(t, s, orphan)
	// What an entry's insert takes on the name it references.
	tx, err := s.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), "SELECT 1 FROM names WHERE path = $1 FOR KEY SHARE", orphan); err != nil {
		t.Fatal(err)
	}
	retained := make(chan error, 1)
	go func() {
		_, err := s.Retain(store.Retention{MaxAge: time.Hour})
		retained <- err
	}()
	select {
	case err := <-retained:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the sweep waits for a commit indexing an old name")
		tx.Rollback(t.Context())
		<-retained
	}
	if keys := listKeys(t, srv.Client(), bucket, prefix); len(keys) != 1 || keys[0] != key {
		t.Errorf("the sweep took the objects of a name being indexed: %v left", keys)
	}
	tx.Rollback(t.Context())
	if _, err := s.Retain(store.Retention{MaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if keys := listKeys(t, srv.Client(), bucket, prefix); len(keys) != 0 {
		t.Errorf("the orphan's objects outlived the sweep: %v", keys)
	}
	var names int
	if err := s.Pool().QueryRow(t.Context(), "SELECT count(*) FROM names").Scan(&names); err != nil || names != 0 {
		t.Errorf("%d names left (%v), want none", names, err)
	}
}

// TestRetain_orphanSweepHoldsItsNames checks the other order: a commit
// whose upload stalled past orphanAge indexes its name while the sweep
// is deleting that name's objects. The commit's insert waits for the
// sweep, then fails for want of the name, rather than index a run whose
// objects are gone.
func TestRetain_orphanSweepHoldsItsNames(t *testing.T) {
	listed, release := make(chan struct{}, 1), make(chan struct{})
	// The sweeper's object requests wait while the test indexes.
	proxy := proxyObjects(t, func(r *http.Request) {
		if r.URL.Query().Has("list-type") {
			select {
			case listed <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	})
	ss := openStores(t, twin{}, twin{endpoint: proxy})
	s, sweeper := ss[0], ss[1]
	srv := s3test.Shared(t)
	orphan := "runs/svc-000000000000/20260301T110000Z"
	plantOrphan(t, s, orphan)
	retained := make(chan error, 1)
	go func() {
		_, err := sweeper.Retain(store.Retention{})
		retained <- err
	}()
	select {
	case <-listed: // the sweep has its names and is deleting their objects
	case err := <-retained:
		t.Fatalf("Retain ended (%v) without listing the orphan's objects", err)
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the sweep listed no objects")
	}
	// What the commit's index transaction does with its name.
	indexed := make(chan error, 1)
	go func() {
		indexed <- pgx.BeginFunc(t.Context(), s.Pool(), func(tx pgx.Tx) error {
			if _, err := tx.Exec(t.Context(), "INSERT INTO targets (id, key, slug) VALUES (1, 'svc', 'svc')"); err != nil {
				return err
			}
			_, err := tx.Exec(t.Context(), `INSERT INTO entries (kind, target_id, time_ns, end_ns, path, status, bytes)
				VALUES ('run', 1, 0, 0, $1, 'complete', 2)`, orphan)
			return err
		})
	}()
	var indexErr error
	waited := false
	for deadline := time.Now().Add(10 * time.Second); !waited && time.Now().Before(deadline); {
		select {
		case indexErr = <-indexed:
			waited = true
			continue
		case <-time.After(20 * time.Millisecond):
		}
		var n int
		if err := s.Pool().QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO entries%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			waited = true
			close(release)
			indexErr = <-indexed
		}
	}
	select {
	case <-release:
	default:
		close(release)
	}
	if err := <-retained; err != nil {
		t.Fatalf("Retain: %v", err)
	}
	var pgErr *pgconn.PgError
	keys := listKeys(t, srv.Client(), s.Objects().Bucket, s.Objects().Prefix)
	if !errors.As(indexErr, &pgErr) || pgErr.Code != "23503" /* foreign_key_violation */ {
		t.Errorf("the commit's index during the sweep: %v (objects left %v); want it to fail for want of its name", indexErr, keys)
	}
	var names, entries int
	if err := s.Pool().QueryRow(t.Context(), "SELECT (SELECT count(*) FROM names), (SELECT count(*) FROM entries)").Scan(&names, &entries); err != nil {
		t.Fatal(err)
	}
	if names != 0 || entries != 0 || len(keys) != 0 {
		t.Errorf("after the sweep: %d names, %d entries, objects %v; want none", names, entries, keys)
	}
}

// TestRetain_onOneConnection checks that Retain needs no connection but
// the one holding its lock: with a pool of one it removes by age, by
// size and the orphans, rather than wait forever for a second connection
// while keeping every other watcher's retention off.
func TestRetain_onOneConnection(t *testing.T) {
	srv := s3test.Shared(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	s, err := shared.Open(t.Context(), shared.Options{Postgres: pgtest.Shared(t).NewDatabase(t) + "&pool_max_conns=1", CacheDir: t.TempDir(),
		Objects: shared.Objects{Bucket: srv.NewBucket(t), Prefix: "heapscope", Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true}})
	if err != nil {
		t.Fatal(err)
	}
	stuck := false
	t.Cleanup(func() {
		if !stuck { // Close would wait for the connection Retain holds
			s.Close()
		}
	})
	var total int64
	for m := range 4 {
		total += storetest.Commit(t, s, store.KindRun, "svc", storetest.Leaky, store.Entry{Time: storetest.At(10 * m)}).Bytes
	}
	plantOrphan(t, s, "runs/svc-000000000000/20260301T110000Z")
	type result struct {
		n   int
		err error
	}
	retained := make(chan result, 1)
	go func() {
		// The run at 0 by age, the one at 10 by size.
		n, err := s.Retain(store.Retention{MaxAge: 25 * time.Minute, Now: storetest.At(30), MaxBytes: total / 2})
		retained <- result{n, err}
	}()
	select {
	case r := <-retained:
		if r.n != 2 || r.err != nil {
			t.Errorf("Retain: %d, %v; want 2 runs removed", r.n, r.err)
		}
	case <-time.After(20 * time.Second):
		stuck = true
		t.Fatal("Retain on a pool of one connection did not end")
	}
	var names int
	if err := s.Pool().QueryRow(t.Context(), "SELECT count(*) FROM names").Scan(&names); err != nil || names != 2 {
		t.Errorf("%d names left (%v), want the 2 runs kept", names, err)
	}
}
