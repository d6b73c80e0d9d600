package watch

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/shared"
	"github.com/heapscope/heapscope/internal/testserver"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// record is one log line of a watcher: its message and attributes, in the
// order the watcher logged them.
type record struct {
	at    time.Time
	msg   string
	attrs map[string]any
}

// recorder is a slog handler that keeps the watcher's lines.
type recorder struct {
	mu   sync.Mutex
	recs []record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	attrs := map[string]any{}
	rec.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.Any()
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, record{at: time.Now(), msg: rec.Message, attrs: attrs})
	return nil
}

// of returns the lines about the target at url whose message starts with
// msg.
func (r *recorder) of(url, msg string) []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []record
	for _, rec := range r.recs {
		key, _ := rec.attrs["target"].(string)
		if strings.HasPrefix(rec.msg, msg) && strings.Contains(key, strings.TrimPrefix(url, "http://")) {
			out = append(out, rec)
		}
	}
	return out
}

// fairWatcher makes a watcher of urls with settings s and the concurrency
// given over a fresh store, its lines kept by the recorder returned.
func fairWatcher(t *testing.T, urls []string, s config.Settings, concurrency int) (*Watcher, *store.Embedded, *recorder) {
	t.Helper()
	cfg, err := config.ForURLs(urls, s)
	if err != nil {
		t.Fatalf("ForURLs: %v", err)
	}
	cfg.Concurrency = concurrency
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	rec := &recorder{}
	w, err := New(Options{Config: cfg, Store: st, Version: "test", Log: slog.New(rec)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return w, st, rec
}

// pprofTarget serves net/http/pprof: a live target, in this process.
func pprofTarget(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// stallTarget answers its command line, then never answers anything
// else: it takes a concurrency slot and hangs in it.
func stallTarget(t *testing.T) string {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/cmdline") {
			w.Write([]byte("stall"))
			return
		}
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv.URL
}

// lateness is how late after their slots the captures recorded began.
func lateness(t *testing.T, recs []record) []time.Duration {
	t.Helper()
	var out []time.Duration
	for _, r := range recs {
		late, ok := r.attrs["late"].(float64)
		if !ok {
			t.Fatalf("captured line without its lateness: %v", r.attrs)
		}
		out = append(out, time.Duration(late*float64(time.Second)))
	}
	return out
}

// TestRun_liveTargetsOnTimeBesideHangingOnes watches two live targets
// beside one that never answers and one that answers, then hangs, with a
// single concurrency slot, a timeout longer than the period and longer
// than the live ones' captures: the live targets are captured at every
// slot, each within a bounded lateness (the other live capture and the
// hanging one's hold, bounded by its window and timeout), the silent one
// never holds the slot, and the hanging ones fail naming the setting to
// raise.
func TestRun_liveTargetsOnTimeBesideHangingOnes(t *testing.T) {
	live := []string{pprofTarget(t), pprofTarget(t)}
	silent, stall := silentTarget(t), stallTarget(t)
	// A period well above what the captures take, even under the race
	// detector on a busy machine: what is asserted is order (each slot
	// captured before the next comes), not how fast the machine is.
	s := config.Settings{Every: 6 * time.Second, Window: 200 * time.Millisecond, Timeout: 1500 * time.Millisecond,
		Profiles: []string{"heap"}}
	w, _, rec := fairWatcher(t, append(live, silent, stall), s, 1)
	// It runs until each live target has three captures and each
	// hanging one a failure: how long that takes is the machine's
	// business; that no live slot is skipped or missed is the test's.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	start := time.Now()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	testserver.Until(t, 2*time.Minute, "three captures of each live target, a failure of each hanging one", func() bool {
		return len(rec.of(live[0], "captured")) >= 3 && len(rec.of(live[1], "captured")) >= 3 &&
			len(rec.of(silent, "capture failed")) > 0 && len(rec.of(stall, "capture failed")) > 0
	})
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	// A capture waits for the slot while the others ahead of it hold it
	// (the other live target's capture, the stalled one's), each bounded
	// by a window and a timeout, far less than a period: it begins before
	// its next slot comes.
	bound := s.Every
	for _, u := range live {
		captured := rec.of(u, "captured")
		key := captured[0].attrs["target"].(string)
		slots := map[string]bool{}
		var latest time.Time
		for _, c := range captured {
			slots[c.attrs["slot"].(string)] = true
			at, err := time.Parse(time.RFC3339Nano, c.attrs["slot"].(string))
			if err != nil {
				t.Fatal(err)
			}
			if at.After(latest) {
				latest = at
			}
		}
		// Every slot up to the latest captured was captured: none
		// skipped for the hanging ones.
		for slot := NextSlot(start, s.Every, Offset(key, s.Every)); !slot.After(latest); slot = slot.Add(s.Every) {
			if !slots[slot.UTC().Format(time.RFC3339Nano)] {
				t.Errorf("%s: slot %s not captured (captured: %v)", u, slot, slots)
			}
		}
		got := lateness(t, captured)
		for _, l := range got {
			if l > bound {
				t.Errorf("%s: a capture began %s after its slot, more than %s", u, l, bound)
			}
		}
		if m := rec.of(u, "slot missed"); len(m) > 0 {
			t.Errorf("%s: %d slots missed beside the hanging targets", u, len(m))
		}
		t.Logf("%s: lateness %v", u, got)
	}
	if c := rec.of(silent, "captured"); len(c) > 0 {
		t.Errorf("the silent target was captured: %v", c)
	}
	for _, u := range []string{silent, stall} {
		failed := rec.of(u, "capture failed")
		if len(failed) == 0 {
			t.Fatalf("%s: no failed capture", u)
		}
		// The silent one fails after its timeout, the stalled one after
		// its window and timeout, a capture's bound: before the next
		// slot comes, whatever the machine's load adds.
		most := s.Every
		for _, f := range failed {
			if err := f.attrs["err"].(error); !strings.Contains(err.Error(), "raise --timeout") {
				t.Errorf("%s: error %q does not name --timeout", u, err)
			}
			slot, err := time.Parse(time.RFC3339Nano, f.attrs["slot"].(string))
			if err != nil {
				t.Fatal(err)
			}
			if d := f.at.Sub(slot); d > most {
				t.Errorf("%s: capture of slot %s failed %s after it, at or past the next slot (%s)", u, slot, d, most)
			}
		}
	}
}

func TestTimeoutSetting(t *testing.T) {
	tests := []struct {
		group string
		want  string
	}{
		{config.CLIGroup, "--timeout"},
		{"api", "timeout of group api"},
	}
	for _, tt := range tests {
		if got := timeoutSetting(config.Target{Group: tt.group}); got != tt.want {
			t.Errorf("timeoutSetting(group %s) = %q, want %q", tt.group, got, tt.want)
		}
	}
}

// TestRun_missedTheMomentItIsLate watches a target that answers, then
// hangs past its next slots: each slot that comes while the capture
// hangs is counted missed as it comes, before the capture fails.
func TestRun_missedTheMomentItIsLate(t *testing.T) {
	w, missed := missedBehindAHang(t, nil, 6*time.Second)
	for _, m := range missed[:2] {
		slot, err := time.Parse(time.RFC3339Nano, m.attrs["slot"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if d := m.at.Sub(slot); d > 500*time.Millisecond {
			t.Errorf("slot %s counted missed %s after it came", slot, d)
		}
		if !strings.Contains(m.msg, "still running") {
			t.Errorf("missed line %q: want the capture running named", m.msg)
		}
	}
	if n := testutil.ToFloat64(w.metrics.missed); int(n) != len(missed) {
		t.Errorf("missed_slots_total %v, want the %d lines", n, len(missed))
	}
}

// missedBehindAHang runs a watcher (in fleet f, when not nil) of a
// target that answers, then hangs for its window and timeout, 3.1 s,
// past its next slots, every second, for the time given; it checks that
// two slots or more were missed before the hung capture failed, and
// returns the watcher and the lines of the slots missed.
func missedBehindAHang(t *testing.T, f Fleet, run time.Duration) (*Watcher, []record) {
	t.Helper()
	stall := stallTarget(t)
	s := config.Settings{Every: time.Second, Window: 100 * time.Millisecond, Timeout: 3 * time.Second,
		Profiles: []string{"heap"}}
	w, _, rec := fairWatcher(t, []string{stall}, s, 1)
	w.opts.Fleet = f
	ctx, cancel := context.WithTimeout(t.Context(), run)
	defer cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	missed, failed := rec.of(stall, "slot missed"), rec.of(stall, "capture failed")
	if len(missed) < 2 || len(failed) == 0 {
		t.Fatalf("%d slots missed, %d captures failed; want at least 2 missed before the first failure", len(missed), len(failed))
	}
	if !missed[1].at.Before(failed[0].at) {
		t.Errorf("second slot counted missed at %s, after the hung capture failed at %s", missed[1].at, failed[0].at)
	}
	return w, missed
}

// TestRun_lateRunDatedAtItsWindow holds the one concurrency slot past a
// target's slot: its run begins late, and is stored at its window's start
// with its slot and lateness beside it, its series' points after the
// slot's.
func TestRun_lateRunDatedAtItsWindow(t *testing.T) {
	live := pprofTarget(t)
	s := config.Settings{Every: 3 * time.Second, Window: 200 * time.Millisecond, Timeout: 2 * time.Second,
		Profiles: []string{"heap"}}
	w, st, _ := fairWatcher(t, []string{live}, s, 1)
	w.sem <- struct{}{} // another capture holds the one slot
	ts, err := w.opts.Config.Targets(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The first slot Run will come to: not so near that it would pass
	// before Run starts.
	slot := NextSlot(time.Now(), s.Every, Offset(ts[0].Key, s.Every))
	if time.Until(slot) < 300*time.Millisecond {
		time.Sleep(time.Until(slot) + 50*time.Millisecond)
		slot = slot.Add(s.Every)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	const held = 1200 * time.Millisecond
	time.Sleep(time.Until(slot.Add(held)))
	<-w.sem
	e := firstRun(t, st)
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !e.Slot.Equal(slot) {
		t.Fatalf("the first run's slot is %s, want %s", e.Slot, slot)
	}
	if late := e.Time.Sub(e.Slot); late < held || late >= s.Every {
		t.Errorf("run dated %s after its slot, want at least the %s the slot was held, less than a period", late, held)
	}
	if got, want := e.LateSeconds, e.Time.Sub(e.Slot).Seconds(); got != want {
		t.Errorf("late_seconds %g, want %g", got, want)
	}
	dir, err := st.RunDir(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Time.Equal(res.Window.Start) {
		t.Errorf("run dated %s, its window began at %s", e.Time, res.Window.Start)
	}
	points, err := st.Series(e.Target, "heap_after_gc", e.Slot.Add(-s.Every), e.Slot.Add(2*s.Every))
	if err != nil {
		t.Fatal(err)
	}
	if len(points) == 0 {
		t.Fatal("no heap_after_gc point of the run")
	}
	for _, p := range points {
		if p.Time.Before(e.Time) {
			t.Errorf("a point at %s, before the run's window began at %s", p.Time, e.Time)
		}
	}
}

// TestRun_missedWhileWaitingForASlot holds the one concurrency slot past
// two of a live target's slots: the slot after the waiting capture's is
// counted missed as it comes, naming the wait, and the waiting capture
// keeps its place and runs once the slot is free.
func TestRun_missedWhileWaitingForASlot(t *testing.T) {
	live := pprofTarget(t)
	s := config.Settings{Every: time.Second, Window: 100 * time.Millisecond, Timeout: 2 * time.Second,
		Profiles: []string{"heap"}}
	w, st, rec := fairWatcher(t, []string{live}, s, 1)
	w.sem <- struct{}{} // another capture holds the one slot
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	missed := testserver.WaitFor(t, time.Minute, "the live target's slot counted missed", func() (record, bool) {
		m := rec.of(live, "slot missed")
		if len(m) == 0 {
			return record{}, false
		}
		return m[0], true
	})
	released := time.Now()
	<-w.sem
	e := firstRun(t, st)
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !strings.Contains(missed.msg, "still waiting for one of the concurrency slots") {
		t.Errorf("missed line %q: want the wait for a slot named", missed.msg)
	}
	slot, err := time.Parse(time.RFC3339Nano, missed.attrs["slot"].(string))
	if err != nil {
		t.Fatal(err)
	}
	// The first run is the waiting capture's: of the slot before the
	// missed one, begun once the slot was free.
	if !e.Slot.Equal(slot.Add(-s.Every)) || e.Time.Before(released) {
		t.Errorf("first run of slot %s at %s; want slot %s, begun after %s", e.Slot, e.Time, slot.Add(-s.Every), released)
	}
	if testutil.ToFloat64(w.metrics.missed) < 1 {
		t.Error("missed_slots_total did not count the missed slot")
	}
}

// firstRun waits for the store's first run, the oldest.
func firstRun(t *testing.T, st store.Store) store.Entry {
	t.Helper()
	return testserver.WaitFor(t, time.Minute, "the store's first run", func() (store.Entry, bool) {
		h, err := st.History(store.Query{})
		if err != nil || len(h.Runs) == 0 {
			return store.Entry{}, false
		}
		return h.Runs[len(h.Runs)-1], true
	})
}

// loneFleet is a fleet of one watcher that owns every target and claims
// every slot, with a short lease: the fleet's schedule without a database.
type loneFleet struct{ lease time.Duration }

func (f loneFleet) Owns(string) bool                                       { return true }
func (f loneFleet) Changes() <-chan struct{}                               { return nil }
func (f loneFleet) Lease() time.Duration                                   { return f.lease }
func (f loneFleet) Claim(context.Context, string, time.Time) (bool, error) { return true, nil }
func (f loneFleet) Done(string, time.Time) shared.Guard                    { return nil }
func (f loneFleet) Holds(string) shared.Guard                              { return nil }
func (f loneFleet) Release(context.Context, string, time.Time) error       { return nil }
func (f loneFleet) Taken(context.Context, string, time.Time) (bool, error) { return false, nil }

// TestRunShared_missedTheMomentItIsLate is TestRun_missedTheMomentItIsLate
// in a fleet, where a slot that comes while the capture of an earlier one
// runs waits to be caught up: it is counted missed the moment it is later
// than two lease periods, not when the next slot comes or the hung
// capture ends.
func TestRunShared_missedTheMomentItIsLate(t *testing.T) {
	f := loneFleet{lease: 100 * time.Millisecond}
	w, missed := missedBehindAHang(t, f, 5*time.Second)
	bound := lateBound(f)
	every := w.opts.Config.Groups[0].Settings.Every
	for _, m := range missed[:2] {
		slot, err := time.Parse(time.RFC3339Nano, m.attrs["slot"].(string))
		if err != nil {
			t.Fatal(err)
		}
		// Counted once late: after the bound, and before the next slot
		// (a second after it) takes its place, as it did when it waited
		// for that.
		if d := m.at.Sub(slot); d < bound || d >= every*7/10 {
			t.Errorf("slot %s counted missed %s after it came, want just after %s", slot, d, bound)
		}
	}
	if n := testutil.ToFloat64(w.metrics.missed); int(n) != len(missed) {
		t.Errorf("missed_slots_total %v, want the %d lines", n, len(missed))
	}
}
