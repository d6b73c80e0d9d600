package storetest

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/store"
)

// testProblems checks what problems need of the index: a finding's cause
// key (computed for a result.json written before keys), its evidence and
// its entry's load rate, and store.Problems over them.
func testProblems(t *testing.T, open Opener) {
	s := open(t)
	res := Fixture(t, Leaky)
	var leak problem.Problem
	for _, f := range res.Findings {
		if f.ID == "leak.inuse-growth" {
			if f.Cause != "" {
				t.Fatalf("the fixture's leak has a cause %q: it should predate cause keys", f.Cause)
			}
			leak.Cause = problem.CauseOf(f)
		}
	}
	Commit(t, s, store.KindRun, "a", Leaky, store.Entry{Time: At(0), Scheduled: true})
	Commit(t, s, store.KindRun, "a", Leaky, store.Entry{Time: At(10), Scheduled: true})
	last := Commit(t, s, store.KindRun, "a", Leaky, store.Entry{Time: At(20), Scheduled: true})
	Commit(t, s, store.KindRun, "a", Partial, store.Entry{Time: At(30), Scheduled: true})
	Commit(t, s, store.KindRun, "b", Leaky, store.Entry{Time: At(0), Scheduled: true})

	h, err := s.History(store.Query{Target: "a", Severities: []string{"high"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Findings) != 3 {
		t.Fatalf("%d high findings of a, want 3", len(h.Findings))
	}
	for _, f := range h.Findings {
		if f.Cause != leak.Cause || f.Evidence["live_slope_bytes_per_minute"] <= 0 {
			t.Errorf("finding %q: cause %q, evidence %v; want cause %q and the result's evidence", f.Kind, f.Cause, f.Evidence, leak.Cause)
		}
	}
	if e := h.Runs[0]; math.Abs(e.LoadRate-400) > 1 {
		t.Errorf("the partial run's load rate %v, want its result's 400/s", e.LoadRate)
	}

	ps, err := store.Problems(s, store.Query{Target: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 {
		t.Fatalf("%d problems of a: %+v, want the leak alone (info findings are not problems)", len(ps), ps)
	}
	p := ps[0]
	if p.Target != "a" || p.Cause != leak.Cause || p.State != problem.Open || p.Captures != 3 || p.Severity != "high" ||
		!p.FirstSeen.Equal(At(0)) || !p.LastSeen.Equal(At(20)) || p.Latest != last.Path ||
		!strings.HasSuffix(p.Where, "leakycache.go:38") || p.Trend == nil || p.Trend.SecondsToLimit <= 0 {
		t.Errorf("problem %+v, want the leak open at leakycache.go:38 in 3 captures from 12:00 to 12:20, with its trend", p)
	}
	all, err := store.Problems(s, store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Target == all[1].Target {
		t.Errorf("problems of every target: %+v, want one of a and one of b", all)
	}

	// A diagnosis over the series shows what it found and resolves nothing.
	series := store.Finding{Target: "b", Time: At(40), Severity: "medium", Kind: "leak.long_term", Title: "heap after GC grows",
		Cause: "leak.long_term", Evidence: map[string]float64{"slope_bytes_per_hour": 6000, "hours_to_limit": 2}}
	if err := s.AddFindings([]store.Finding{series}); err != nil {
		t.Fatal(err)
	}
	ps, err = store.Problems(s, store.Query{Target: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].State != problem.Open || ps[1].State != problem.Open {
		t.Fatalf("problems of b: %+v, want the run's leak and the series' growth, both open", ps)
	}
	for _, p := range ps {
		if p.Kind == "leak.long_term" && (p.Trend == nil || p.Trend.PerMinute != 100 || p.Trend.SecondsToLimit != 7200) {
			t.Errorf("the series problem's trend %+v, want 100 B/min and 2 hours to the limit from its stored evidence", p.Trend)
		}
	}
}

// testProblemsOutliveRetention checks that a problem's text stays while a
// capture still shows it, goes with the last one, and comes back with
// the next capture that shows it.
func testProblemsOutliveRetention(t *testing.T, open Opener) {
	s := open(t)
	now := At(60)
	high := func(want int) {
		t.Helper()
		h, err := s.History(store.Query{Target: "a", Severities: []string{"high"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Findings) != want {
			t.Fatalf("%d high findings of a, want %d", len(h.Findings), want)
		}
		for _, f := range h.Findings {
			if f.Title == "" || f.Kind != "leak.inuse-growth" || !strings.HasSuffix(f.Where, "leakycache.go:38") {
				t.Errorf("finding %+v, want the fixture's leak with its title and site", f)
			}
		}
	}
	Commit(t, s, store.KindRun, "a", Leaky, store.Entry{Time: At(0), Scheduled: true})
	Commit(t, s, store.KindRun, "a", Leaky, store.Entry{Time: At(30), Scheduled: true})
	if _, err := s.Retain(store.Retention{MaxAge: 45 * time.Minute, Now: now}); err != nil {
		t.Fatal(err)
	}
	high(1)
	if _, err := s.Retain(store.Retention{MaxAge: time.Minute, Now: now}); err != nil {
		t.Fatal(err)
	}
	high(0)
	Commit(t, s, store.KindRun, "a", Leaky, store.Entry{Time: At(61), Scheduled: true})
	high(1)
}
