package watch

import (
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/trigger"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// TestOnce_storesDownAndUp: a target that refuses every request for
// three captures in a row is down, stored as such with the error it
// gave; captured again, it is up, stored too.
func TestOnce_storesDownAndUp(t *testing.T) {
	var refusing atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refusing.Load() {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	w, st := newWatcher(t, []string{srv.URL}, config.Settings{Window: time.Second, Timeout: 5 * time.Second})

	refusing.Store(true)
	for i := range downAfter {
		if err := w.Once(t.Context()); err == nil {
			t.Fatalf("capture %d of a refusing target succeeded", i+1)
		}
	}
	refusing.Store(false)
	if err := w.Once(t.Context()); err != nil {
		t.Fatalf("capture after the target came back: %v", err)
	}
	events, err := st.Events(store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[0].Kind != store.EventUp || events[1].Kind != store.EventDown || events[1].Detail == "" {
		t.Fatalf("stored events %+v: want down (with its error), then up", events)
	}
	if !events[1].Time.Before(events[0].Time) {
		t.Errorf("down at %v, up at %v", events[1].Time, events[0].Time)
	}
}

// TestNoteRestart_oneRestartOnce: a restart is seen first by a sample
// that has the new process's start time beside the old one's PID (read
// while one replaced the other), then by one that knows the new PID: one
// restart is stored; a later one, of another process, is stored too.
func TestNoteRestart_oneRestartOnce(t *testing.T) {
	w, st := newWatcher(t, []string{"http://127.0.0.1:1"}, config.Settings{})
	ts, err := w.opts.Config.Targets(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wt := &watched{target: ts[0]}
	at := time.Now()
	proc := func(pid int, start time.Time) trigger.Sample {
		return trigger.Sample{Time: at, PID: pid, Start: start, Known: trigger.KnownPID | trigger.KnownStart}
	}
	a, b, c := at.Add(-time.Hour), at.Add(-time.Minute), at.Add(-10*time.Second)
	seen := []trigger.Sample{
		proc(100, a),
		proc(100, b), // the old PID, the new start time
		proc(200, b.Add(10*time.Millisecond)),
		proc(200, b),
		proc(300, c), // another restart
	}
	for i := 1; i < len(seen); i++ {
		w.noteRestart(t.Context(), wt, seen[i-1], seen[i])
	}
	events, err := st.Events(store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 {
		t.Fatalf("stored events %+v: want the two restarts, once each", events)
	}
}
