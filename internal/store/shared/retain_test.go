package shared_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/storetest"
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

// TestRetain_spareAnOrphanBeingIndexed checks that the orphan sweep
// passes over an old name a commit is indexing (its entry's reference
// holds the name's row), and removes it once the commit has gone.
func TestRetain_spareAnOrphanBeingIndexed(t *testing.T) {
	s := open(t)
	srv := s3test.Shared(t)
	bucket, prefix := s.Objects().Bucket, s.Objects().Prefix
	orphan := "runs/svc-000000000000/20260301T110000Z"
	if _, err := s.Pool().Exec(t.Context(), "INSERT INTO names (path, taken) VALUES ($1, now() - interval '2 hours')", orphan); err != nil {
		t.Fatal(err)
	}
	key := prefix + "/" + orphan + "/result.json"
	if _, err := srv.Client().PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket),
		Key: aws.String(key), Body: strings.NewReader("{}")}); err != nil {
		t.Fatal(err)
	}
	// What an entry's insert takes on the name it references.
	tx, err := s.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), "SELECT 1 FROM names WHERE path = $1 FOR KEY SHARE", orphan); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Retain(store.Retention{MaxAge: time.Hour}); err != nil {
		t.Fatal(err)
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
