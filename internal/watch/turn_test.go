package watch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/trigger"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// TestCapture_bundlePreemptsTheScheduledRun: a trigger fires while the
// target's scheduled run (with a CPU profile) is in its window. The
// bundle does not collide with it ("already being CPU-profiled", a
// partial bundle): it ends the scheduled run, whose slot is counted
// missed, and captures the moment complete.
func TestCapture_bundlePreemptsTheScheduledRun(t *testing.T) {
	leaky := startExample(t, "leaky")
	cfg, err := config.ForURLs([]string{leaky.URL}, config.Settings{Every: time.Hour, Window: 30 * time.Second, Timeout: 10 * time.Second,
		Poll: time.Minute, Profiles: []string{"heap", "cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w, err := New(Options{Config: cfg, Store: st, Version: "test", BundleWindow: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := cfg.Targets(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	w.update(t.Context(), ts, false)
	wt := w.watchedList()[0]

	scheduledDone := make(chan error, 1)
	admitted := make(chan struct{})
	go func() {
		o := scheduled(time.Now())
		o.admitted = func() { close(admitted) }
		_, _, err := w.capture(context.Background(), wt, o)
		scheduledDone <- err
	}()
	<-admitted
	time.Sleep(500 * time.Millisecond) // into its window and its CPU profile
	at := time.Now()
	bundle, _, err := w.capture(t.Context(), wt, occasion{slot: at, firing: &trigger.Firing{Expr: "goroutines>=1", Value: 9, Threshold: 1, At: at}})
	if err != nil {
		t.Fatalf("bundle: %v", err)
	}
	if bundle.Status != "complete" {
		t.Errorf("bundle %s is %s: want complete, its CPU profile not taken by the scheduled run", bundle.Path, bundle.Status)
	}
	select {
	case err := <-scheduledDone:
		if !errors.Is(err, errPreempted) {
			t.Errorf("scheduled run: %v, want pre-empted", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the scheduled run of a 30 s window still runs 10 s after the bundle")
	}
	if n := testutil.ToFloat64(w.metrics.missed); n != 1 {
		t.Errorf("missed slots %v, want the pre-empted run's", n)
	}
	h, err := st.History(store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != 0 || len(h.Bundles) != 1 {
		t.Errorf("stored %d runs and %d bundles, want the bundle alone", len(h.Runs), len(h.Bundles))
	}
}
