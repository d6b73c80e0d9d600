package store

import (
	"fmt"
	"testing"
	"time"
)

// TestOpen_MovesFindingsToProblems takes an index back to schema version
// 5, where every capture held a copy of its findings, and wants Open to
// migrate it to one row per problem and a sighting per finding, History
// answering as before.
func TestOpen_MovesFindingsToProblems(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := fixtureDir(t, fixtureLeaky)
	for n := range 3 {
		for _, target := range []string{"http://a:6060", "http://b:6060"} {
			if _, err := s.Ingest(src, Entry{Kind: KindRun, Target: target, Time: at(10 * n), Scheduled: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.Ingest(fixtureDir(t, fixturePartial), Entry{Kind: KindBundle, Target: "http://a:6060", Time: at(25),
		Trigger: &Trigger{Expr: "rss>=1MiB", Value: 2, Threshold: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddFindings([]Finding{{Target: "http://a:6060", Time: at(30), Severity: "medium", Kind: "leak.long_term",
		Title: "heap after GC grows", Cause: "leak.long_term"}}); err != nil {
		t.Fatal(err)
	}
	want, err := s.History(Query{})
	if err != nil {
		t.Fatal(err)
	}
	const problemsQ = "SELECT target_id, cause, kind, location, title, evidence, first_ns, last_ns, captures FROM problems ORDER BY target_id, cause, kind, location"
	wantProblems := dump(t, s.reader, problemsQ)
	wantSightings := dump(t, s.reader, "SELECT entry_id, ord, severity FROM sightings ORDER BY entry_id, ord")

	toVersion5(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir); err != nil {
		t.Fatalf("open the version 5 index: %v", err)
	}
	defer s.Close()
	got, err := s.History(Query{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Findings) != fmt.Sprint(want.Findings) {
		t.Errorf("findings after the migration:\n%v\nwant\n%v", got.Findings, want.Findings)
	}
	if g, w := fmt.Sprint(dump(t, s.reader, problemsQ)), fmt.Sprint(wantProblems); g != w {
		t.Errorf("problems after the migration:\n%s\nwant (as commits write them)\n%s", g, w)
	}
	if g, w := fmt.Sprint(dump(t, s.reader, "SELECT entry_id, ord, severity FROM sightings ORDER BY entry_id, ord")), fmt.Sprint(wantSightings); g != w {
		t.Errorf("sightings after the migration:\n%s\nwant\n%s", g, w)
	}
	if n := count(t, s.reader, "findings"); n != 1 {
		t.Errorf("%d rows left in findings, want the series finding alone", n)
	}
}

// TestRetain_RemovesProblemsNoCaptureShows wants a problem's row to go
// with the last capture that showed it, and to stay while one does.
func TestRetain_RemovesProblemsNoCaptureShows(t *testing.T) {
	s := openStore(t)
	src := fixtureDir(t, fixtureLeaky)
	for n := range 3 {
		if _, err := s.Ingest(src, Entry{Kind: KindRun, Target: "http://a:6060", Time: at(10 * n), Scheduled: true}); err != nil {
			t.Fatal(err)
		}
	}
	problems := count(t, s.reader, "problems")
	if problems == 0 {
		t.Fatal("no problems indexed for the leaky fixture")
	}
	now := at(20).Add(time.Minute)
	if _, err := s.Retain(Retention{MaxAge: 10 * time.Minute, Now: now}); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s.reader, "problems"); n != problems {
		t.Errorf("%d problems after removing the older captures, want the %d the newest still shows", n, problems)
	}
	if _, err := s.Retain(Retention{MaxAge: time.Second, Now: now}); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"problems", "sightings"} {
		if n := count(t, s.reader, table); n != 0 {
			t.Errorf("%d rows in %s after removing every capture, want none", n, table)
		}
	}
}

// toVersion5 takes s's index back to schema version 5: the findings of
// entries in findings, as its commits wrote them.
func toVersion5(t *testing.T, s *Embedded) {
	t.Helper()
	if _, err := s.writer.Exec(`INSERT INTO findings (entry_id, target_id, time_ns, path, source, severity, kind, title, location, cause, evidence)
		SELECT e.id, e.target_id, e.time_ns, e.path, e.kind, s.severity, p.kind, p.title, p.location, p.cause, p.evidence
		FROM sightings s JOIN entries e ON e.id = s.entry_id JOIN problems p ON p.id = s.problem_id ORDER BY e.id, s.ord;
		DROP TABLE sightings; DROP TABLE problems; PRAGMA user_version = 5`); err != nil {
		t.Fatal(err)
	}
}
