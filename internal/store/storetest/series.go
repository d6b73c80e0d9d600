package storetest

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/store"
)

func testSeries(t *testing.T, open Opener) {
	s := open(t)
	res := Fixture(t, Leaky)
	window := time.Duration(res.Window.DurationSeconds * float64(time.Second))
	for _, m := range []int{0, 15, 30} {
		Commit(t, s, store.KindRun, "svc", Leaky, store.Entry{Time: At(m)})
	}
	Commit(t, s, store.KindRun, "other", Leaky, store.Entry{Time: At(15)})
	values := map[string]float64{}
	for _, v := range store.SeriesOf(res) {
		values[v.Metric] = v.Value
	}
	tests := []struct {
		name     string
		target   string
		metric   string
		from, to time.Time
		want     []time.Time
	}{
		{"all", "svc", store.MetricHeapAfterGC, time.Time{}, time.Time{}, []time.Time{At(0).Add(window), At(15).Add(window), At(30).Add(window)}},
		{"from, inclusive", "svc", store.MetricRSS, At(15).Add(window), time.Time{}, []time.Time{At(15).Add(window), At(30).Add(window)}},
		{"to, inclusive", "svc", store.MetricGoroutines, time.Time{}, At(15).Add(window), []time.Time{At(0).Add(window), At(15).Add(window)}},
		{"between", "svc", store.MetricPauseP99, At(10), At(20), []time.Time{At(15).Add(window)}},
		{"other target", "other", store.MetricGCCPU, time.Time{}, time.Time{}, []time.Time{At(15).Add(window)}},
		{"unknown target", "nobody", store.MetricRSS, time.Time{}, time.Time{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pts, err := s.Series(tt.target, tt.metric, tt.from, tt.to)
			if err != nil {
				t.Fatal(err)
			}
			if pts == nil || len(pts) != len(tt.want) {
				t.Fatalf("Series: %v, want points at %v", pts, tt.want)
			}
			v, ok := values[tt.metric]
			if !ok && len(pts) > 0 {
				t.Fatalf("the fixture measures no %s", tt.metric)
			}
			for i, p := range pts {
				if !p.Time.Equal(tt.want[i]) || p.Value != v {
					t.Errorf("point %d: %v at %s, want %v at %s", i, p.Value, p.Time, v, tt.want[i])
				}
			}
		})
	}
	if _, err := s.Series("svc", "heap", time.Time{}, time.Time{}); err == nil || !strings.Contains(err.Error(), store.MetricHeapAfterGC) {
		t.Errorf("Series of an unknown metric: %v, want an error listing the metrics", err)
	}
}

func testRetain(t *testing.T, open Opener) {
	tests := []struct {
		name   string
		maxAge time.Duration
		// bySize sets MaxBytes to the bytes of the entries wanted.
		bySize bool
		want   []string // the entries kept
	}{
		{"nothing to do", 0, false, []string{"a0", "a5", "b10", "a15", "b20", "a30"}},
		{"by age", 20 * time.Minute, false, []string{"b20", "a30"}},
		{"by size, oldest first", 0, true, []string{"b10", "a15", "b20", "a30"}},
		{"by age, then size", 25 * time.Minute, true, []string{"a30"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, es := history(t, open)
			if err := s.AddFindings([]store.Finding{{Target: "a", Time: At(1), Kind: "old"}, {Target: "a", Time: At(39), Kind: "new"}}); err != nil {
				t.Fatal(err)
			}
			r := store.Retention{MaxAge: tt.maxAge, Now: At(40)}
			if tt.bySize {
				for _, name := range tt.want {
					r.MaxBytes += es[name].Bytes
				}
			}
			removed, err := s.Retain(r)
			if err != nil {
				t.Fatal(err)
			}
			if removed != len(es)-len(tt.want) {
				t.Errorf("Retain removed %d, want %d", removed, len(es)-len(tt.want))
			}
			h, err := s.History(store.Query{})
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for name, e := range es {
				indexed := slices.ContainsFunc(append(h.Runs, h.Bundles...), func(x store.Entry) bool { return x.ID == e.ID })
				_, dirErr := s.RunDir(t.Context(), e)
				if indexed != (dirErr == nil) {
					t.Errorf("%s: indexed %v, its run: %v", name, indexed, dirErr)
				}
				if indexed {
					kept = append(kept, name)
				}
				if _, ok, err := s.EntryAt(e.Path); ok != indexed || err != nil {
					t.Errorf("%s: EntryAt %v (%v), indexed %v", name, ok, err, indexed)
				}
			}
			slices.Sort(kept)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(kept, want) {
				t.Errorf("kept %v, want %v", kept, want)
			}
			size, err := s.Size()
			if err != nil {
				t.Fatal(err)
			}
			if r.MaxBytes > 0 && size > r.MaxBytes {
				t.Errorf("Size %d after retention to %d", size, r.MaxBytes)
			}
			// The findings of removed entries go with them, series
			// findings by age; the points of kept ones stay.
			oldKept := slices.ContainsFunc(h.Findings, func(f store.Finding) bool { return f.Kind == "old" })
			if oldKept == (tt.maxAge > 0) {
				t.Errorf("the old series finding kept: %v, with MaxAge %s", oldKept, tt.maxAge)
			}
			for _, f := range h.Findings {
				if f.Source != store.SourceSeries && !slices.ContainsFunc(kept, func(name string) bool { return es[name].Path == f.Path }) {
					t.Errorf("a finding of removed entry %s is left", f.Path)
				}
			}
			pts, err := s.Series("a", store.MetricHeapAfterGC, time.Time{}, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			wantPts := 0
			for _, name := range kept {
				if strings.HasPrefix(name, "a") && measures(t, historyFixtures[name], store.MetricHeapAfterGC) {
					wantPts++
				}
			}
			if len(pts) != wantPts {
				t.Errorf("%d heap points of a left, want %d (its kept complete entries')", len(pts), wantPts)
			}
		})
	}
}

func testRunDir(t *testing.T, open Opener) {
	s := open(t)
	e := Commit(t, s, store.KindRun, "svc", Leaky, store.Entry{Time: At(0)})
	first, err := s.RunDir(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.RunDir(t.Context(), e)
	if err != nil || again != first {
		t.Errorf("RunDir twice: %s, then %s (%v)", first, again, err)
	}
	if _, err := os.Stat(first + "/" + store.EntryFile); err != nil {
		t.Errorf("the run's entry.json: %v", err)
	}
	for _, path := range []string{"", ".", "..", "../x", "/etc", "runs/../../etc", "runs/svc/nothing-here"} {
		bad := e
		bad.Path = path
		if dir, err := s.RunDir(t.Context(), bad); err == nil {
			t.Errorf("RunDir of path %q: %s, want an error", path, dir)
		}
	}
}

// measures says whether a fixture's run measured a metric.
func measures(t *testing.T, fixture, metric string) bool {
	return slices.ContainsFunc(store.SeriesOf(Fixture(t, fixture)), func(v store.MetricValue) bool { return v.Metric == metric })
}
