package watch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/run"
	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/testserver"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// newWatcher makes a watcher of urls with settings s over a fresh store.
func newWatcher(t *testing.T, urls []string, s config.Settings) (*Watcher, *store.Embedded) {
	t.Helper()
	cfg, err := config.ForURLs(urls, s)
	if err != nil {
		t.Fatalf("ForURLs: %v", err)
	}
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	w, err := New(Options{Config: cfg, Store: st, Version: "test"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return w, st
}

func TestOnce_storesEachLiveTargetAndNamesTheOthers(t *testing.T) {
	leaky := startExample(t, "leaky")
	dead := deadTarget(t)
	w, st := newWatcher(t, []string{leaky.URL, dead}, config.Settings{Window: time.Second, Timeout: 5 * time.Second})

	err := w.Once(t.Context())
	if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(dead, "http://")) {
		t.Fatalf("Once error = %v, want one naming the dead target %s", err, dead)
	}
	if strings.Contains(err.Error(), strings.TrimPrefix(leaky.URL, "http://")) {
		t.Errorf("Once error names the live target: %v", err)
	}
	h, err := st.History(store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != 1 || len(h.Bundles) != 0 {
		t.Fatalf("history: %d runs, %d bundles; want the live target's one run", len(h.Runs), len(h.Bundles))
	}
	e := h.Runs[0]
	if !strings.Contains(e.Target, strings.TrimPrefix(leaky.URL, "http://")) || !e.Scheduled || e.Status != string(result.StatusComplete) {
		t.Errorf("run %+v: want a complete scheduled run of %s", e, leaky.URL)
	}
	res, err := rundir.Read(filepath.Join(st.Dir(), e.Path))
	if err != nil {
		t.Fatalf("the stored run does not read back: %v", err)
	}
	if res.Target.PID != leaky.PID() {
		t.Errorf("stored run's PID %d, want the example's %d (found from its port)", res.Target.PID, leaky.PID())
	}
	if _, err := os.Stat(filepath.Join(st.Dir(), e.Path, "report.html")); err == nil {
		t.Error("a watch run keeps report.html; it should be lean (view draws it)")
	}
	if r, err := st.Check(false); err != nil || !r.OK() {
		t.Errorf("store check after Once: %v %v", r, err)
	}
}

// TestRun_keepsEachTargetsSlotsBesideHostileOnes watches a real service
// beside three hostile targets — one that never answers, one whose heap
// profile is a gzip bomb (300 MiB of zeros), one whose body never ends —
// and checks that the service is captured at each of its slots, that the
// hostile ones fail with their reasons, and that the watcher's heap stays
// bounded meanwhile.
func TestRun_keepsEachTargetsSlotsBesideHostileOnes(t *testing.T) {
	leaky := startExample(t, "leaky")
	silent := silentTarget(t)
	hostile := []string{silent, bombTarget(t, 300<<20), endlessTarget(t)}
	every := 2 * time.Second
	w, st := newWatcher(t, append([]string{leaky.URL}, hostile...), config.Settings{
		Every: every, Window: 300 * time.Millisecond, Timeout: time.Second, Poll: time.Second,
	})
	// The watcher runs until the live target has four runs and each
	// hostile target a failure: what is asserted is that the live target
	// goes on being captured beside them, however long the bomb's
	// inflating under the race detector keeps two cores busy (on two
	// cores shared with a dozen other processes, minutes).
	const runs = 4
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	peak := make(chan uint64, 1)
	go func() { peak <- peakHeap(ctx) }()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	testserver.Until(t, 5*time.Minute, "four runs of the live target, and each hostile target failed", func() bool {
		h, err := st.History(store.Query{Limit: 0})
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Runs) < runs {
			return false
		}
		for _, hh := range w.Health() {
			if !strings.Contains(hh.Target, strings.TrimPrefix(leaky.URL, "http://")) && hh.ConsecutiveFailures < 1 {
				return false
			}
		}
		return true
	})
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	// Twice the decoded-size limit (the collector's headroom over what
	// is live), and the test's own 100 MiB.
	if p := <-peak; p > 2*256<<20+100<<20 {
		t.Errorf("the watcher's heap peaked at %d MiB beside a gzip bomb and an endless body", p>>20)
	}
	h, err := st.History(store.Query{Limit: 0})
	if err != nil {
		t.Fatal(err)
	}
	var times []time.Time
	for _, e := range h.Runs {
		if !strings.Contains(e.Target, strings.TrimPrefix(leaky.URL, "http://")) {
			t.Errorf("a run of the silent target was stored: %+v", e)
			continue
		}
		if e.Time.Before(e.Slot) {
			t.Errorf("run dated %s, before its slot %s", e.Time, e.Slot)
		}
		times = append(times, e.Slot)
	}
	// Each slot captured once, on the target's own offset, whatever the
	// hostile targets do.
	if len(times) < runs {
		t.Fatalf("%d runs of the live target, want at least %d: %v", len(times), runs, times)
	}
	seen := map[time.Time]bool{}
	for _, at := range times {
		if seen[at] {
			t.Errorf("slot %s captured twice", at)
		}
		seen[at] = true
		if off := at.Sub(time.Unix(0, 0)) % every; off != Offset(h.Runs[0].Target, every) {
			t.Errorf("run at %s is off its slot: offset %s, want %s", at, off, Offset(h.Runs[0].Target, every))
		}
	}
	for _, hh := range w.Health() {
		if strings.Contains(hh.Target, strings.TrimPrefix(leaky.URL, "http://")) {
			continue
		}
		if hh.ConsecutiveFailures < 1 || hh.LastError == "" {
			t.Errorf("hostile target's health %+v: want failures counted with the last error", hh)
		}
		t.Logf("%s: %s", hh.Target, hh.LastError)
	}
	if r, err := st.Check(false); err != nil || !r.OK() {
		t.Errorf("store check after Run: %v %v", r, err)
	}
}

// peakHeap samples the heap this process holds every 50 ms until ctx ends
// and returns the most seen.
func peakHeap(ctx context.Context) uint64 {
	var peak uint64
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		peak = max(peak, m.HeapInuse)
		select {
		case <-ctx.Done():
			return peak
		case <-tick.C:
		}
	}
}

// hoard keeps what it is given, in buffers larger than the heap
// profile's sampling interval (512 KiB), so that every one is sampled and
// its growth is as steady in the profiles as in the heap.
type hoard struct {
	mu   sync.Mutex
	kept [][]byte
}

func (h *hoard) keep(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kept = append(h.kept, make([]byte, n))
}

// TestOnce_storesTheLeakOfTheStoredRuns runs the CronJob form four times
// over a service whose heap grows by 4 MiB between the runs, as a
// service's does between a CronJob's runs: each run alone shows no
// growth, the diagnosis over the stored runs names the line that keeps
// the memory and is stored as a finding of the series.
func TestOnce_storesTheLeakOfTheStoredRuns(t *testing.T) {
	h := &hoard{}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	w, st := newWatcher(t, []string{srv.URL}, config.Settings{Window: 500 * time.Millisecond, Timeout: 5 * time.Second})
	for range 4 {
		for range 4 {
			h.keep(1 << 20)
		}
		if err := w.Once(t.Context()); err != nil {
			t.Fatalf("Once: %v", err)
		}
	}
	hist, err := st.History(store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, f := range hist.Findings {
		if f.Source == store.SourceSeries && strings.HasPrefix(f.Kind, "leak.") && strings.Contains(f.Where, "watch_test.go") {
			found = true
		}
		if f.Source == store.SourceRun && strings.HasPrefix(f.Kind, "leak.") {
			t.Errorf("a run alone found a leak: %s", f.Title)
		}
	}
	if !found {
		t.Errorf("no leak of the series at the hoard after %d runs; findings %+v", len(hist.Runs), hist.Findings)
	}
	runtime.KeepAlive(h)
}

// TestDiagnoseStored_startsAfterARestart stores runs of the leaky example,
// restarts it where it was, and stores one more: the diagnosis over the
// stored runs names the restart and takes only the runs after it.
func TestDiagnoseStored_startsAfterARestart(t *testing.T) {
	leaky := startExample(t, "leaky")
	w, st := newWatcher(t, []string{leaky.URL}, config.Settings{Window: 500 * time.Millisecond, Timeout: 5 * time.Second})
	for range 2 {
		if err := w.Once(t.Context()); err != nil {
			t.Fatalf("Once: %v", err)
		}
	}
	again := restartExample(t, leaky, "leaky", leaky.URL)
	if err := w.Once(t.Context()); err != nil {
		t.Fatalf("Once after the restart: %v", err)
	}
	rep, _, err := run.DiagnoseStored(t.Context(), st, again.URL, time.Now().Add(-time.Hour), run.Diagnosis{})
	if err != nil {
		t.Fatalf("DiagnoseStored: %v", err)
	}
	var restarted, oneRun bool
	for _, n := range rep.Notes {
		restarted = restarted || strings.Contains(n, "the target restarted between its runs")
		oneRun = oneRun || strings.Contains(n, "heap after GC over 1 stored run")
	}
	if !restarted || !oneRun {
		t.Errorf("notes %q: want the restart named and the series of the one run after it", rep.Notes)
	}
}
