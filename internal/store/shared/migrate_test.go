package shared_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/shared"
	"github.com/heapscope/heapscope/internal/store/storetest"
	"github.com/heapscope/heapscope/internal/testserver/pgtest"
	"github.com/heapscope/heapscope/internal/testserver/s3test"
)

// TestOpen_movesFindingsToProblems takes a database back to schema
// version 6, where every capture held a copy of its findings, and wants
// Open to migrate it to one row per problem and a sighting per finding,
// History answering as before.
func TestOpen_movesFindingsToProblems(t *testing.T) {
	srv := s3test.Shared(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	objects := shared.Objects{Bucket: srv.NewBucket(t), Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true}
	db := pgtest.Shared(t).NewDatabase(t)
	openStore := func() *shared.Store {
		s, err := shared.Open(context.Background(), shared.Options{Postgres: db, Objects: objects, CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s := openStore()
	for n := range 3 {
		for _, target := range []string{"a", "b"} {
			storetest.Commit(t, s, store.KindRun, target, storetest.Leaky, store.Entry{Time: storetest.At(10 * n), Scheduled: true})
		}
	}
	storetest.Commit(t, s, store.KindBundle, "a", storetest.Partial, store.Entry{Time: storetest.At(25),
		Trigger: &store.Trigger{Expr: "rss>=1MiB", Value: 2, Threshold: 1}})
	if err := s.AddFindings([]store.Finding{{Target: "a", Time: storetest.At(30), Severity: "medium", Kind: "leak.long_term",
		Title: "heap after GC grows", Cause: "leak.long_term"}}); err != nil {
		t.Fatal(err)
	}
	want, err := s.History(store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows := func(q string) string {
		t.Helper()
		r, err := conn.Query(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		vals, err := pgx.CollectRows(r, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(vals)
	}
	const problemsQ = "SELECT target_id, cause, kind, location, title, evidence, first_ns, last_ns, captures FROM problems ORDER BY target_id, cause, kind, location"
	const sightingsQ = "SELECT entry_id, ord, severity FROM sightings ORDER BY entry_id, ord"
	wantProblems, wantSightings := rows(problemsQ), rows(sightingsQ)

	// Version 6: the findings of entries in findings, as its commits wrote them.
	if _, err := conn.Exec(t.Context(), `INSERT INTO findings (entry_id, target_id, time_ns, path, source, severity, kind, title, location, cause, evidence)
		SELECT e.id, e.target_id, e.time_ns, e.path, e.kind, s.severity, p.kind, p.title, p.location, p.cause, p.evidence
		FROM sightings s JOIN entries e ON e.id = s.entry_id JOIN problems p ON p.id = s.problem_id ORDER BY e.id, s.ord;
		DROP TABLE sightings; DROP TABLE problems; DELETE FROM heapscope_schema WHERE version > 6`); err != nil {
		t.Fatal(err)
	}
	s = openStore()
	got, err := s.History(store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Findings) == 0 || fmt.Sprint(got.Findings) != fmt.Sprint(want.Findings) {
		t.Errorf("findings after the migration:\n%v\nwant\n%v", got.Findings, want.Findings)
	}
	if g := rows(problemsQ); g != wantProblems {
		t.Errorf("problems after the migration:\n%s\nwant (as commits write them)\n%s", g, wantProblems)
	}
	if g := rows(sightingsQ); g != wantSightings {
		t.Errorf("sightings after the migration:\n%s\nwant\n%s", g, wantSightings)
	}
	if g := rows("SELECT count(*) FROM findings"); g != "[[1]]" {
		t.Errorf("rows left in findings: %s, want the series finding alone", g)
	}
}
