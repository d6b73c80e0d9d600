package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/examples"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rss"
)

// heapCauses are the reconciliation's explanations of the heap arenas, as
// diagnose's evidence names them.
var heapCauses = []string{"heap-matches", "heap-untouched", "heap-released-resident", "heap-resident"}

// causesOf returns the reconciliation's items a rss.breakdown finding
// recorded, by id (reconciled_<id>_bytes), with their bytes.
func causesOf(f *result.Finding) map[string]float64 {
	out := map[string]float64{}
	for k, v := range f.Evidence {
		id, ok := strings.CutPrefix(k, "reconciled_")
		if !ok || k == "reconciled_heap_gap_bytes" {
			continue
		}
		out[strings.ReplaceAll(strings.TrimSuffix(id, "_bytes"), "_", "-")] = v
	}
	return out
}

// rssFinding returns the one rss.breakdown finding among fs.
func rssFinding(t *testing.T, what string, fs []result.Finding) *result.Finding {
	t.Helper()
	got := findingsOf(fs, "rss.breakdown")
	if len(got) != 1 {
		t.Fatalf("%s: rss.breakdown findings %+v, want one", what, got)
	}
	return &got[0]
}

func findingsOf(fs []result.Finding, id string) []result.Finding {
	var out []result.Finding
	for _, f := range fs {
		if f.ID == id {
			out = append(out, f)
		}
	}
	return out
}

// TestRSS_profileDiagnoseAndRSSAgree runs the three commands that explain
// one live process's resident memory — profile (which diagnoses the run
// it records), diagnose of that run directory, and rss of its PID — and
// checks that they tell the same story: the same figures of what the
// runtime has committed, within what the time between their reads lets
// move, and the same named cause for the heap arenas and for the memory
// outside them.
func TestRSS_profileDiagnoseAndRSSAgree(t *testing.T) {
	svc, err := startExample(t.Context(), "leaky")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	pid := svc.PID()

	out := t.TempDir()
	method, path := examples.DefaultLoad("leaky")
	prof := heapscope(t, "profile", svc.URL, "--duration", "2s", "--no-cpu", "--snapshots", "3",
		"--load", method+" "+path, "--rate", "200", "--out", out, "--format", "json")
	if prof.code != exitOK {
		t.Fatalf("profile: exit %d: %s", prof.code, prof.stderr)
	}
	var run result.Run
	if err := json.Unmarshal([]byte(prof.stdout), &run); err != nil {
		t.Fatalf("profile: %v\n%s", err, prof.stdout)
	}
	if run.Target.PID != pid || run.RSS.Source != "proc" {
		t.Fatalf("profile read process %d's RSS from %q, want %d's from /proc", run.Target.PID, run.RSS.Source, pid)
	}
	dirs, err := filepath.Glob(filepath.Join(out, "*"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("run directories %v (%v), want one", dirs, err)
	}

	diag := heapscope(t, "diagnose", dirs[0], "--format", "json")
	if diag.code != exitOK {
		t.Fatalf("diagnose: exit %d: %s", diag.code, diag.stderr)
	}
	var again report.Findings
	if err := json.Unmarshal([]byte(diag.stdout), &again); err != nil {
		t.Fatalf("diagnose: %v\n%s", err, diag.stdout)
	}
	r := rssJSON(t, strconv.Itoa(pid))
	if r.Runtime == nil || !r.Runtime.Discovered {
		t.Fatalf("rss: no runtime figures from the process's port: %s", r.RuntimeUnknown)
	}

	profiled := rssFinding(t, "profile", run.Findings)
	rediagnosed := rssFinding(t, "diagnose", again.Findings)
	t.Logf("profile: %s: %s", profiled.Title, profiled.Fix)
	t.Logf("rss: runtime %+v; heap arenas %d bytes resident", *r.Runtime, r.GoHeap.RSSBytes)
	for _, e := range r.Gap {
		t.Logf("rss: %s %d: %s", e.ID, e.Bytes, e.Text)
	}

	// profile and diagnose read the same recorded figures: the same
	// finding, to the byte.
	if profiled.Severity != rediagnosed.Severity || profiled.Title != rediagnosed.Title || profiled.Fix != rediagnosed.Fix {
		t.Errorf("diagnose of the run says %s %q: %q; profile said %s %q: %q",
			rediagnosed.Severity, rediagnosed.Title, rediagnosed.Fix, profiled.Severity, profiled.Title, profiled.Fix)
	}
	for k, v := range profiled.Evidence {
		if w, ok := rediagnosed.Evidence[k]; !ok || w != v {
			t.Errorf("evidence %s: profile %.0f, diagnose %.0f (present %v)", k, v, w, ok)
		}
	}

	// rss reads the process again, a few seconds later: the figures
	// agree within the reconciliation's tolerance, the causes are the
	// same.
	ev := profiled.Evidence
	for _, fig := range []struct {
		name       string
		run, later uint64
	}{
		{"committed (Sys − HeapReleased)", uint64(ev["runtime_committed_bytes"]), r.Runtime.CommittedBytes},
		{"committed in the arenas", uint64(ev["runtime_arena_committed_bytes"]), r.Runtime.ArenaHeldBytes},
		{"mapped outside the arenas", uint64(ev["runtime_off_arena_bytes"]), r.Runtime.OffHeapBytes},
		{"heap arenas resident", uint64(ev["kernel_go_heap_rss_bytes"]), r.GoHeap.RSSBytes},
	} {
		if fig.run == 0 || !rss.Agree(fig.run, fig.later) {
			t.Errorf("%s: %d bytes at the run's end, %d read by rss: beyond the tolerance", fig.name, fig.run, fig.later)
		}
	}
	gapRun := ev["reconciled_heap_gap_bytes"]
	gapLater := float64(r.GoHeap.RSSBytes) - float64(r.Runtime.ArenaHeldBytes)
	if d := math.Abs(gapRun - gapLater); d > max(rss.ToleranceBytes, rss.ToleranceShare*float64(r.Runtime.ArenaHeldBytes)) {
		t.Errorf("heap arenas' resident less committed: %.0f bytes at the run's end, %.0f read by rss: beyond the tolerance", gapRun, gapLater)
	}
	causes := causesOf(profiled)
	rssCauses := map[string]bool{}
	for _, e := range r.Gap {
		rssCauses[e.ID] = true
	}
	var heapCause string
	for _, c := range heapCauses {
		if _, ok := causes[c]; ok {
			heapCause = c
		}
	}
	if heapCause == "" || heapCause != r.Gap[0].ID {
		t.Errorf("the heap arenas: profile says %q (items %v), rss says %q", heapCause, causes, r.Gap[0].ID)
	}
	for _, c := range []string{"runtime-off-heap", "unknown-anon", "files"} {
		if _, ok := causes[c]; ok != rssCauses[c] {
			t.Errorf("%s: in profile's explanation %v, in rss's %v", c, ok, rssCauses[c])
		}
	}
}
