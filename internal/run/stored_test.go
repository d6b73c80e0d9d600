package run

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/target"
)

// TestDiagnoseStored stores four lean runs of a service that keeps 4 MiB
// more between each, as watch would, and diagnoses them as one series: the
// growth is found at the line that keeps the buffers. The buffers are
// larger than the sampling interval (512 KiB), so every one is sampled and
// the growth is steady in the profiles as it is in the heap.
func TestDiagnoseStored(t *testing.T) {
	h := &hoard{}
	srv := serve(t, pprofMux(map[string]http.HandlerFunc{"/work": h.ServeHTTP}))
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := time.Now()
	for i := range 4 {
		for range 4 {
			h.keep(1 << 20)
		}
		p, err := st.Begin(store.KindRun, "")
		if err != nil {
			t.Fatal(err)
		}
		_, dir, err := Profile(t.Context(), Config{Target: target.Options{BaseURL: srv.URL}, Duration: 200 * time.Millisecond,
			Snapshots: 2, OutDir: p.Dir(), Lean: true})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if _, err := p.Commit(dir, store.Entry{Scheduled: true}); err != nil {
			t.Fatalf("commit run %d: %v", i, err)
		}
	}
	rep, _, err := DiagnoseStored(t.Context(), st, srv.URL, start.Add(-time.Minute), Diagnosis{})
	if err != nil {
		t.Fatalf("DiagnoseStored: %v", err)
	}
	var found bool
	for _, f := range rep.Findings {
		if strings.HasPrefix(f.ID, "leak.") && strings.Contains(f.Function, "hoard") {
			found = true
		}
	}
	if !found {
		t.Errorf("no leak at the hoard over four stored runs; findings %+v, notes %v", rep.Findings, rep.Notes)
	}

	if _, _, err := DiagnoseStored(t.Context(), st, "http://127.0.0.1:1", start, Diagnosis{}); err == nil || !strings.Contains(err.Error(), "the store has no target http://127.0.0.1:1") {
		t.Errorf("an unknown target: %v", err)
	}
}

func TestOnGrid(t *testing.T) {
	origin := time.Date(2026, 3, 2, 0, 7, 0, 0, time.UTC)
	// runs returns count entries every 15 minutes from the first-th,
	// newest first, as History lists them.
	runs := func(first, count int) []store.Entry {
		var es []store.Entry
		for i := first + count - 1; i >= first; i-- {
			es = append(es, store.Entry{Path: fmt.Sprint(i), Time: origin.Add(time.Duration(i) * 15 * time.Minute)})
		}
		return es
	}
	paths := func(es []store.Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Path)
		}
		return out
	}
	tests := []struct {
		name        string
		first, runs int
		max         int
	}{
		{"fewer than the bound: all", 0, 3, 48},
		{"as many as the bound: all", 0, 48, 48},
		{"a day", 0, 96, 48},
		{"a week", 0, 672, 48},
		{"a week, later", 333, 672, 48},
		{"two", 0, 672, 2},
	}
	// Every count of runs up to a week's, from origins a minute apart:
	// never more picks than the bound.
	for count := 2; count <= 700; count++ {
		for shift := range 15 {
			es := runs(shift*count, count)
			if got := onGrid(es, 48); len(got) > 48 {
				t.Fatalf("%d picks of %d runs from run %d, bound 48", len(got), count, shift*count)
			}
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es := runs(tt.first, tt.runs)
			got := onGrid(es, tt.max)
			if len(got) > tt.max || (tt.runs <= tt.max && len(got) != tt.runs) {
				t.Fatalf("%d picks of %d runs, bound %d", len(got), tt.runs, tt.max)
			}
			if got[0].Path != es[0].Path || got[len(got)-1].Path != es[len(es)-1].Path {
				t.Errorf("picks %v do not hold the newest (%s) and the oldest (%s)", paths(got), es[0].Path, es[len(es)-1].Path)
			}
			for i := 1; i < len(got); i++ {
				if !got[i].Time.Before(got[i-1].Time) {
					t.Fatalf("picks %v not newest first", paths(got))
				}
			}
			// An hour later (four runs in, four out), the picks are the
			// same but for a few at the ends.
			later := onGrid(runs(tt.first+4, tt.runs), tt.max)
			kept := 0
			for _, p := range later {
				kept += len(slices.DeleteFunc(slices.Clone(got), func(e store.Entry) bool { return e.Path != p.Path }))
			}
			if new := len(later) - kept; tt.runs > tt.max && new > 3 {
				t.Errorf("an hour later %d of %d picks are new: %v, then %v", new, len(later), paths(got), paths(later))
			}
		})
	}
}
