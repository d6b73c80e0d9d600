package shared_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/shared"
	"github.com/heapscope/heapscope/internal/store/storetest"
	"github.com/heapscope/heapscope/internal/testserver/pgtest"
	"github.com/heapscope/heapscope/internal/testserver/s3test"
)

// TestCommitGuarded_refusalStoresNothing checks that a commit whose
// guard refuses in the index transaction stores nothing: no entry, no
// objects, its name free again, nothing its guard wrote; that one whose
// guard passes is stored with what its guard wrote; and that a guard's
// failure that is not a refusal is tried again.
func TestCommitGuarded_refusalStoresNothing(t *testing.T) {
	refused := errors.New("claim taken over")
	// mark writes a row in the guard's transaction: it must be stored
	// with the capture, or rolled back with it.
	mark := func(name string) shared.Guard {
		return func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "INSERT INTO members (id, expires) VALUES ($1, now())", name)
			return err
		}
	}
	failOnce := func(name string) shared.Guard {
		calls := 0
		return func(ctx context.Context, tx pgx.Tx) error {
			if calls++; calls == 1 {
				return errors.New("connection reset")
			}
			return mark(name)(ctx, tx)
		}
	}
	tests := []struct {
		name    string
		guard   shared.Guard
		wantErr error
	}{
		{"refused", func(ctx context.Context, tx pgx.Tx) error {
			if err := mark("refused")(ctx, tx); err != nil {
				return err
			}
			return shared.Refuse(refused)
		}, refused},
		{"passed", mark("passed"), nil},
		{"failed once, then passed", failOnce("failed once, then passed"), nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			const key = "svc"
			p, err := s.Begin(store.KindRun, key)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Abandon()
			storetest.WriteFixture(t, storetest.Leaky, p.Dir())
			e, err := shared.CommitGuarded(p, p.Dir(), store.Entry{Time: storetest.At(i), Scheduled: true}, tt.guard)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("CommitGuarded: %v, want %v", err, tt.wantErr)
			}
			h, herr := s.History(store.Query{Target: key})
			if herr != nil {
				t.Fatal(herr)
			}
			var names int
			if err := s.Pool().QueryRow(t.Context(), "SELECT count(*) FROM names").Scan(&names); err != nil {
				t.Fatal(err)
			}
			var marked bool
			if err := s.Pool().QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM members WHERE id = $1)", tt.name).Scan(&marked); err != nil {
				t.Fatal(err)
			}
			objects := listKeys(t, s3test.Shared(t).Client(), s.Objects().Bucket, s.Objects().Prefix)
			if tt.wantErr != nil {
				if len(h.Runs) != 0 || names != 0 || len(objects) != 0 || marked {
					t.Errorf("a refused commit left %d entries, %d names, objects %v, its guard's row %v", len(h.Runs), names, objects, marked)
				}
				return
			}
			if len(h.Runs) != 1 || h.Runs[0].Path != e.Path || names != 1 || len(objects) == 0 || !marked {
				t.Errorf("a passed commit stored %d entries, %d names, %d objects, its guard's row %v", len(h.Runs), names, len(objects), marked)
			}
		})
	}
}

// TestCommit_stalledUploadEndsByItsDeadline checks that a commit whose
// object server takes requests and never answers them fails by its
// deadline, with a one-line error, and leaves the name it took to Retain.
func TestCommit_stalledUploadEndsByItsDeadline(t *testing.T) {
	stalled, over := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodHead: // the bucket is there
		case r.Method == http.MethodPut:
			select {
			case stalled <- struct{}{}:
			default:
			}
			select {
			case <-r.Context().Done():
			case <-over:
			}
		case r.Method == http.MethodGet && r.URL.Query().Has("list-type"):
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><IsTruncated>false</IsTruncated></ListBucketResult>`)
		default:
			http.Error(w, "not here", http.StatusNotImplemented)
		}
	}))
	defer srv.Close()
	defer close(over)
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	s, err := shared.Open(t.Context(), shared.Options{Postgres: pgtest.Shared(t).NewDatabase(t), CacheDir: t.TempDir(),
		Objects: shared.Objects{Bucket: "b", Endpoint: srv.URL, Region: "us-east-1", PathStyle: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const deadline = 2 * time.Second
	shared.SetCommitTimeout(s, deadline)
	p, err := s.Begin(store.KindRun, "svc")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Abandon()
	storetest.WriteFixture(t, storetest.Leaky, p.Dir())
	start := time.Now()
	_, err = p.Commit(p.Dir(), store.Entry{Time: storetest.At(0)})
	took := time.Since(start)
	select {
	case <-stalled:
	default:
		t.Fatalf("no upload reached the object server; Commit: %v", err)
	}
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "\n") {
		t.Errorf("Commit against a stalled object server: %v, want one line ending by the deadline", err)
	}
	// The deadline, then the cleanup's own requests.
	if took > deadline+30*time.Second {
		t.Errorf("Commit took %s against a deadline of %s", took, deadline)
	}
	var names int
	if err := s.Pool().QueryRow(t.Context(), "SELECT count(*) FROM names").Scan(&names); err != nil {
		t.Fatal(err)
	}
	// The name stays, for Retain: a request the deadline cut off may
	// still land under it.
	if names != 1 || !strings.Contains(err.Error(), "Retain removes") {
		t.Errorf("%d names taken after the upload failed (want 1, left to Retain); error %q", names, err)
	}
}

// TestOpen_existing checks that readers (Existing) never change the
// database: they refuse one without heapscope's schema and make no
// table in it; and that a role without CREATE opens, writes and reads
// a store its administrator migrated.
func TestOpen_existing(t *testing.T) {
	srv := s3test.Shared(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	objects := shared.Objects{Bucket: srv.NewBucket(t), Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true}
	pg := pgtest.Shared(t)
	role := fmt.Sprintf("writer_%d", time.Now().UnixNano())
	t.Cleanup(func() { // after the database is dropped: registered first
		conn, err := pgx.Connect(context.Background(), pg.URL)
		if err == nil {
			conn.Exec(context.Background(), "DROP ROLE IF EXISTS "+role)
			conn.Close(context.Background())
		}
	})
	db := pg.NewDatabase(t)
	openAs := func(url string, existing bool) (*shared.Store, error) {
		s, err := shared.Open(t.Context(), shared.Options{Postgres: url, Objects: objects, CacheDir: t.TempDir(), Existing: existing})
		if err == nil {
			t.Cleanup(func() { s.Close() })
		}
		return s, err
	}

	if _, err := openAs(db, true); err == nil || !strings.Contains(err.Error(), "holds no heapscope store") {
		t.Errorf("a reader opened a database without the schema: %v", err)
	}
	admin, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var tables int
	if err := admin.QueryRow(t.Context(), "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("a reader's refused Open left %d tables", tables)
	}

	if _, err := openAs(db, false); err != nil { // the administrator migrates
		t.Fatal(err)
	}
	for _, sql := range []string{
		"CREATE ROLE " + role + " LOGIN",
		"REVOKE CREATE ON SCHEMA public FROM PUBLIC",
		"GRANT USAGE ON SCHEMA public TO " + role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO " + role,
		"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO " + role,
	} {
		if _, err := admin.Exec(t.Context(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	for _, existing := range []bool{false, true} {
		s, err := openAs(u.String(), existing)
		if err != nil {
			t.Fatalf("a role without CREATE opens the migrated store (existing %v): %v", existing, err)
		}
		e := storetest.Commit(t, s, store.KindRun, "svc", storetest.Leaky, store.Entry{Time: storetest.At(map[bool]int{false: 0, true: 1}[existing])})
		if _, ok, err := s.EntryAt(e.Path); !ok || err != nil {
			t.Errorf("the role's commit is not found: %v, %v", ok, err)
		}
	}
}

// TestDropUnindexed_waitsForTheIndexTransaction checks what a commit
// whose index transaction's answer was lost does: it waits for that
// transaction, still running, to end; keeps the run when it committed,
// and removes its objects and name when it did not.
func TestDropUnindexed_waitsForTheIndexTransaction(t *testing.T) {
	for _, commits := range []bool{true, false} {
		t.Run(fmt.Sprintf("commits %v", commits), func(t *testing.T) {
			s := open(t)
			ctx := t.Context()
			const path = "runs/svc/20260301T120000Z"
			if _, err := s.Pool().Exec(ctx, "INSERT INTO names (path) VALUES ($1)", path); err != nil {
				t.Fatal(err)
			}
			bucket, prefix := s.Objects().Bucket, s.Objects().Prefix
			if _, err := s3test.Shared(t).Client().PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket,
				Key: aws.String(prefix + "/" + path + "/result.json"), Body: strings.NewReader("{}")}); err != nil {
				t.Fatal(err)
			}
			// The index transaction, its entry inserted, not yet ended.
			tx, err := s.Pool().Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background())
			for _, sql := range []string{
				"INSERT INTO targets (id, key, slug) VALUES (1, 'svc', 'svc')",
				"INSERT INTO entries (kind, target_id, time_ns, end_ns, path, status, bytes) VALUES ('run', 1, 0, 0, '" + path + "', 'complete', 2)",
			} {
				if _, err := tx.Exec(ctx, sql); err != nil {
					t.Fatal(err)
				}
			}
			type outcome struct {
				stored bool
				err    error
			}
			done := make(chan outcome, 1)
			go func() {
				stored, err := shared.DropUnindexed(s, path)
				done <- outcome{stored, err}
			}()
			select {
			case o := <-done:
				t.Fatalf("settled (%v, %v) while the index transaction was still running", o.stored, o.err)
			case <-time.After(300 * time.Millisecond):
			}
			if commits {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			o := <-done
			keys := listKeys(t, s3test.Shared(t).Client(), bucket, prefix)
			var names int
			if err := s.Pool().QueryRow(ctx, "SELECT count(*) FROM names").Scan(&names); err != nil {
				t.Fatal(err)
			}
			if o.err != nil || o.stored != commits || (len(keys) == 1) != commits || (names == 1) != commits {
				t.Errorf("after the transaction (committed %v): stored %v, %v; objects %v, %d names", commits, o.stored, o.err, keys, names)
			}
		})
	}
}
