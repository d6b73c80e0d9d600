package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/store"
)

func testHistory(t *testing.T, open Opener) {
	s, es := history(t, open)
	series := []store.Finding{
		{Target: "a", Time: At(40), Severity: "high", Kind: "leak.series-growth", Title: "heap after GC grows for days", Where: "main.go:12"},
		{Target: "b", Time: At(40), Severity: "medium", Kind: "leak.series-growth", Title: "goroutines grow", Source: store.SourceSeries},
	}
	if err := s.AddFindings(series); err != nil {
		t.Fatal(err)
	}
	leakyFindings := len(Fixture(t, Leaky).Findings)
	partialFindings := len(Fixture(t, Partial).Findings)
	highs := func(name string) int {
		n := 0
		for _, f := range Fixture(t, name).Findings {
			if f.Severity == "high" {
				n++
			}
		}
		return n
	}
	leakyHigh, partialHigh := highs(Leaky), highs(Partial)
	tests := []struct {
		name         string
		q            store.Query
		runs         []string
		bundles      []string
		findings     int
		seriesTarget []string // targets of the series findings listed
	}{
		{"everything", store.Query{}, []string{"a30", "a15", "b10", "a0"}, []string{"b20", "a5"},
			4*leakyFindings + 2*partialFindings + 2, []string{"a", "b"}},
		{"one target", store.Query{Target: "b"}, []string{"b10"}, []string{"b20"},
			leakyFindings + partialFindings + 1, []string{"b"}},
		{"since, inclusive", store.Query{Since: At(15)}, []string{"a30", "a15"}, []string{"b20"},
			leakyFindings + 2*partialFindings + 2, []string{"a", "b"}},
		{"until, exclusive", store.Query{Until: At(15)}, []string{"b10", "a0"}, []string{"a5"},
			3 * leakyFindings, nil},
		{"labels", store.Query{Labels: map[string]string{"env": "dev"}}, []string{"b10"}, []string{"b20"},
			leakyFindings + partialFindings + 1, []string{"b"}},
		{"labels no entry carries", store.Query{Labels: map[string]string{"env": "staging"}}, nil, nil, 0, nil},
		{"limit", store.Query{Limit: 1}, []string{"a30"}, []string{"b20"}, 1, []string{"a"}},
		{"severities", store.Query{Severities: []string{"high"}}, []string{"a30", "a15", "b10", "a0"}, []string{"b20", "a5"},
			4*leakyHigh + 2*partialHigh + 1, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := s.History(tt.q)
			if err != nil {
				t.Fatal(err)
			}
			want := func(names []string) []int64 {
				out := []int64{}
				for _, n := range names {
					out = append(out, es[n].ID)
				}
				return out
			}
			if got := ids(h.Runs); !slices.Equal(got, want(tt.runs)) {
				t.Errorf("runs %v, want %v (%v)", got, want(tt.runs), tt.runs)
			}
			if got := ids(h.Bundles); !slices.Equal(got, want(tt.bundles)) {
				t.Errorf("bundles %v, want %v (%v)", got, want(tt.bundles), tt.bundles)
			}
			if len(h.Findings) != tt.findings {
				t.Errorf("%d findings, want %d", len(h.Findings), tt.findings)
			}
			var seriesTargets []string
			for i, f := range h.Findings {
				if i > 0 && f.Time.After(h.Findings[i-1].Time) {
					t.Errorf("finding %d newer than the one before", i)
				}
				if f.Source == store.SourceSeries {
					seriesTargets = append(seriesTargets, f.Target)
				}
			}
			slices.Sort(seriesTargets)
			if !slices.Equal(seriesTargets, tt.seriesTarget) {
				t.Errorf("series findings of %v, want %v", seriesTargets, tt.seriesTarget)
			}
		})
	}
}

func testHistoryJSON(t *testing.T, open Opener) {
	s := open(t)
	h, err := s.History(store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"runs":[],"bundles":[],"findings":[]}` {
		t.Errorf("an empty history: %s, want empty lists", data)
	}
	s, es := history(t, open)
	h, err = s.History(store.Query{Target: "a", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	data, err = json.Marshal(h.Bundles[0])
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"id", "kind", "target", "labels", "time", "path", "status", "bytes", "trigger", "capture_seconds", "scheduled"} {
		if _, ok := got[key]; !ok {
			t.Errorf("a bundle in JSON has no %q: %s", key, data)
		}
	}
	if got["path"] != es["a5"].Path || got["time"] != "2026-03-01T12:05:00Z" {
		t.Errorf("a bundle in JSON: %s, want path %s at 12:05", data, es["a5"].Path)
	}
}

func testTargets(t *testing.T, open Opener) {
	s, _ := history(t, open)
	if err := s.AddFindings([]store.Finding{{Target: "c", Time: At(1), Kind: "k", Title: "a series finding alone"}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Targets()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Targets: %v, want the targets with entries, a and b", got)
	}
}

func testLastHealthyRun(t *testing.T, open Opener) {
	s, es := history(t, open)
	tests := []struct {
		name   string
		target string
		before time.Time
		want   string // "": none
	}{
		// a15 is partial, a30 unscheduled, a5 a bundle: a0 is a's baseline.
		{"skips partial, unscheduled runs and bundles", "a", At(60), "a0"},
		{"before, exclusive", "a", At(0), ""},
		{"other target", "b", At(60), "b10"},
		{"unknown target", "c", At(60), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ok, err := s.LastHealthyRun(tt.target, tt.before)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == "" && ok:
				t.Errorf("LastHealthyRun: %s, want none", e.Path)
			case tt.want != "" && (!ok || e.ID != es[tt.want].ID):
				t.Errorf("LastHealthyRun: %s (%v), want %s", e.Path, ok, es[tt.want].Path)
			case ok && e.Labels["env"] == "":
				t.Errorf("LastHealthyRun: %+v, without its labels", e)
			}
		})
	}
}

func testMarkBeforeOOM(t *testing.T, open Opener) {
	tests := []struct {
		name     string
		target   string
		killedAt time.Time
		want     string // "": none
	}{
		{"last bundle before the kill", "a", At(60), "a5"},
		{"a run when no bundle came before", "a", At(3), "a0"},
		{"nothing before", "a", At(0), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, es := history(t, open)
			e, ok, err := s.MarkBeforeOOM(tt.target, tt.killedAt)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if ok {
					t.Errorf("MarkBeforeOOM: marked %s, want none", e.Path)
				}
				return
			}
			if !ok || e.ID != es[tt.want].ID || !e.BeforeOOM {
				t.Fatalf("MarkBeforeOOM: %+v (%v), want %s marked", e, ok, es[tt.want].Path)
			}
			h, err := s.History(store.Query{Target: tt.target})
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range append(h.Runs, h.Bundles...) {
				if x.BeforeOOM != (x.ID == e.ID) {
					t.Errorf("%s: before_oom %v in the index", x.Path, x.BeforeOOM)
				}
			}
			dir, err := s.RunDir(t.Context(), e)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := store.ReadRecord(dir)
			if err != nil || !rec.BeforeOOM || rec.Trigger == nil != (e.Trigger == nil) || rec.Labels["env"] != "prod" {
				t.Errorf("entry.json after the mark: %+v, %v", rec, err)
			}
		})
	}
}

func testAddFindings(t *testing.T, open Opener) {
	s := open(t)
	tests := []struct {
		name    string
		fs      []store.Finding
		wantErr bool
	}{
		{"no target", []store.Finding{{Time: At(0), Kind: "k"}}, true},
		{"no time", []store.Finding{{Target: "a", Kind: "k"}}, true},
		{"two", []store.Finding{{Target: "a", Time: At(0), Kind: "k", Path: "runs/x/y"}, {Target: "a", Time: At(1), Kind: "k"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.AddFindings(tt.fs); (err != nil) != tt.wantErr {
				t.Errorf("AddFindings: %v, want error %v", err, tt.wantErr)
			}
		})
	}
	h, err := s.History(store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Findings) != 2 || h.Findings[0].Source != store.SourceSeries || h.Findings[1].Path != "runs/x/y" {
		t.Errorf("findings: %+v, want the two series findings, newest first", h.Findings)
	}
}

func testSize(t *testing.T, open Opener) {
	s, es := history(t, open)
	var want int64
	for _, e := range es {
		want += e.Bytes
	}
	if got, err := s.Size(); err != nil || got != want {
		t.Errorf("Size: %d (%v), want %d", got, err, want)
	}
	// The mark rewrites entry.json, a few bytes longer: Size still is the
	// bytes of the stored files, every one of them read back.
	if _, ok, err := s.MarkBeforeOOM("a", At(60)); err != nil || !ok {
		t.Fatalf("MarkBeforeOOM: %v %v", ok, err)
	}
	want = 0
	for _, e := range all(t, s, store.Query{}) {
		dir, err := s.RunDir(t.Context(), e)
		if err != nil {
			t.Fatal(err)
		}
		n, err := TreeBytes(dir)
		if err != nil {
			t.Fatal(err)
		}
		if n != e.Bytes {
			t.Errorf("%s: %d bytes indexed, %d in its files", e.Path, e.Bytes, n)
		}
		want += n
	}
	if got, err := s.Size(); err != nil || got != want {
		t.Errorf("Size after a mark: %d (%v), want the files' %d", got, err, want)
	}
}
