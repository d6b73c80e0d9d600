//go:build linux

package watch

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/heapscope/heapscope/internal/testserver"
	"github.com/heapscope/heapscope/internal/trigger"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// runTriggers runs the triggers of each of w's targets (their loops, or
// their idle group's) until the test ends.
func runTriggers(t *testing.T, w *Watcher) []*watched {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(func() { cancel(); w.loops.Wait() })
	targets, err := w.opts.Config.Targets(ctx)
	if err != nil {
		t.Fatalf("Targets: %v", err)
	}
	var wts []*watched
	for _, tg := range targets {
		wts = append(wts, &watched{target: tg, ctx: ctx, health: Health{Target: tg.Key},
			fresh: make(chan trigger.Sample, 1), turn: make(chan struct{}, 1)})
	}
	w.mu.Lock()
	for _, wt := range wts {
		w.startTriggers(wt)
	}
	w.mu.Unlock()
	return wts
}

// TestTriggers_localTargetsShareOneReadingOfTheSockets watches targets
// without triggers on ports of 127.0.0.1, some served by this process
// and some by nothing, for several polls: the machine's sockets are read
// at most once a poll for all of them, and the processes' open files
// scanned once, to find the listener, whose PID is then kept.
func TestTriggers_localTargetsShareOneReadingOfTheSockets(t *testing.T) {
	const served, closed = 40, 10
	var urls []string
	for range served {
		srv := httptest.NewServer(http.NotFoundHandler())
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	// Held open until all are picked, so that the system does not hand
	// one port out twice.
	var lns []net.Listener
	for range closed {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, "http://"+ln.Addr().String())
		lns = append(lns, ln)
	}
	for _, ln := range lns {
		ln.Close()
	}
	const poll = 300 * time.Millisecond
	w, _ := newWatcher(t, urls, config.Settings{Poll: poll, Every: time.Hour})
	start := time.Now()
	wts := runTriggers(t, w)
	testserver.WaitFor(t, time.Minute, "the listener seen", func() (bool, bool) {
		for _, wt := range wts[:served] {
			w.mu.Lock()
			s := wt.sampler
			w.mu.Unlock()
			if s == nil || s.pid() != os.Getpid() {
				return false, false
			}
		}
		return true, true
	})
	time.Sleep(5 * poll)
	for i, wt := range wts[:served] {
		// The first sample, the first look at the PID, perhaps one more
		// as the loops start: then /proc/PID/stat alone.
		if n := wt.sampler.full.Load(); n > 3 {
			t.Errorf("target %d, served, without triggers: %d full samples over %s at a poll of %s; want at most 3", i, n, time.Since(start).Round(poll), poll)
		}
	}
	reads, scans := w.listeners.Reads()
	polls := int(time.Since(start)/poll) + 1
	if reads > polls+1 || reads >= served+closed {
		t.Errorf("%d targets over %d polls: %d readings of /proc/net/tcp; want at most one a poll", served+closed, polls, reads)
	}
	if scans < 1 || scans > 2 {
		t.Errorf("%d scans of the processes' open files; want the one that found the listener (or two, if the first sample straddled a poll)", scans)
	}
	t.Logf("%d targets, %d polls: %d readings, %d scans", served+closed, polls, reads, scans)
}

// TestTriggers_restartOfATargetWithoutTriggers restarts, on its port, a
// local target watched with no triggers: the idle loop checks only that
// its process still runs, and the restart is noticed and counted.
func TestTriggers_restartOfATargetWithoutTriggers(t *testing.T) {
	leaky := startExample(t, "leaky")
	const poll = 200 * time.Millisecond
	w, _ := newWatcher(t, []string{leaky.URL}, config.Settings{Poll: poll, Every: time.Hour})
	wts := runTriggers(t, w)
	pidOf := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		if s := wts[0].sampler; s != nil {
			return s.pid()
		}
		return 0
	}
	first := testserver.WaitFor(t, time.Minute, "the example's first process", func() (int, bool) { p := pidOf(); return p, p > 0 })
	time.Sleep(3 * poll) // idle polls: the liveness check alone
	restartExample(t, leaky, "leaky", leaky.URL)
	second := testserver.WaitFor(t, time.Minute, "the example restarted as another process", func() (int, bool) { p := pidOf(); return p, p > 0 && p != first })
	testserver.WaitFor(t, time.Minute, "the gauge to follow the restart", func() (float64, bool) {
		n := testutil.ToFloat64(w.metrics.restarts.WithLabelValues("false"))
		return n, n >= 1
	})
	if reads, _ := w.listeners.Reads(); reads > 4 {
		t.Errorf("one target, one restart: %d readings of /proc/net/tcp; want it read only to find the listener", reads)
	}
	t.Logf("pid %d, then %d", first, second)
}
