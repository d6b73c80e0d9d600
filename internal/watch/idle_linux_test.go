//go:build linux

package watch

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/sysmem"
	"github.com/heapscope/heapscope/internal/testserver"
	"github.com/heapscope/heapscope/internal/trigger"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// statCounter reads /proc/PID/stat for a watcher's idle groups, counting
// the reads by PID; replaced gives a PID another start time, as a
// process that took the PID of one gone would have.
type statCounter struct {
	mu       sync.Mutex
	reads    map[int]int
	replaced map[int]bool
}

func (c *statCounter) read(pid int) (sysmem.Stat, error) {
	c.mu.Lock()
	c.reads[pid]++
	replaced := c.replaced[pid]
	c.mu.Unlock()
	st, err := (sysmem.Proc{}).Stat(pid)
	if replaced {
		st.StartTime++
	}
	return st, err
}

func (c *statCounter) count(pid int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[pid]
}

// idleTargets makes n targets without triggers, polled every poll, each
// given the PID of pids in turn, as a process serving several does.
func idleTargets(t *testing.T, n int, pids []int, poll time.Duration) (*Watcher, []*watched) {
	t.Helper()
	var urls []string
	for i := range n {
		urls = append(urls, fmt.Sprintf("http://127.0.0.1:1/t%d", i))
	}
	w, _ := newWatcher(t, urls, config.Settings{Poll: poll, Every: 24 * time.Hour})
	targets, err := w.opts.Config.Targets(t.Context())
	if err != nil {
		t.Fatalf("Targets: %v", err)
	}
	var wts []*watched
	for i, tg := range targets {
		tg.PID = pids[i%len(pids)]
		wts = append(wts, &watched{target: tg, health: Health{Target: tg.Key},
			fresh: make(chan trigger.Sample, 1), turn: make(chan struct{}, 1), stopTriggers: func() {}})
	}
	return w, wts
}

// startIdle starts the triggers of wts, in a context ended with the
// returned function, which waits for the loops to end.
func startIdle(w *Watcher, wts []*watched) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	w.mu.Lock()
	for _, wt := range wts {
		wt.ctx = ctx
		w.startTriggers(wt)
	}
	w.mu.Unlock()
	return func() { cancel(); w.loops.Wait() }
}

// TestIdle_eachProcessIsReadOnceAPoll watches targets without triggers
// that share few processes, as one process serving many ports does: a
// poll reads each process's /proc/PID/stat once, whatever the number of
// its targets, and while the processes run as they did, no target is
// sampled in full again, nor has a goroutine of its own. A scheduled
// run's measurement makes its target's next poll a full sample; a process
// that is not the one seen (another start time under its PID) makes its
// targets', and only theirs; the targets of a process share its sample.
func TestIdle_eachProcessIsReadOnceAPoll(t *testing.T) {
	self, parent := os.Getpid(), os.Getppid()
	tests := []struct {
		name string
		n    int
		pids []int
	}{
		{"one process, 60 targets", 60, []int{self}},
		{"two processes, 40 targets", 40, []int{self, parent}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const poll, polls = 5 * time.Second, 4
				w, wts := idleTargets(t, tt.n, tt.pids, poll)
				reads := &statCounter{reads: map[int]int{}, replaced: map[int]bool{}}
				w.statPID = reads.read
				goroutines := runtime.NumGoroutine()
				stop := startIdle(w, wts)
				defer stop()
				synctest.Wait() // the first poll, as the targets join
				if n := runtime.NumGoroutine() - goroutines; n > 2 {
					t.Errorf("%d targets started %d goroutines; want the group's loop alone", tt.n, n)
				}
				// (the targets that join while it runs have theirs
				// after it: a read more)
				before := map[int]int{}
				for _, pid := range tt.pids {
					before[pid] = reads.count(pid)
				}
				for range polls {
					time.Sleep(poll)
					synctest.Wait()
				}
				for _, pid := range tt.pids {
					if n := reads.count(pid) - before[pid]; n != polls {
						t.Errorf("pid %d: %d reads of its stat over %d polls; want one a poll", pid, n, polls)
					}
				}
				full := func(wt *watched) int64 { return wt.sampler.full.Load() }
				for _, wt := range wts {
					if n := full(wt); n != 1 {
						t.Errorf("%s: %d full samples; want 1, at its first poll", wt.target.Key, n)
					}
				}
				w.idleMu.Lock()
				groups := len(w.idle)
				w.idleMu.Unlock()
				if groups != 1 {
					t.Errorf("%d idle groups for one poll interval; want 1", groups)
				}

				// A scheduled run's measurement: that target alone
				// is sampled in full at the next poll.
				samples := w.procSamples.Load()
				w.freshMeasurement(wts[0], &result.Run{MemStats: result.MemStats{SysBytes: 64 << 20, AllocBytes: 8 << 20}})
				// Another process under the last PID: its targets
				// are sampled in full, the others are not.
				replaced := tt.pids[len(tt.pids)-1]
				reads.mu.Lock()
				reads.replaced[replaced] = true
				reads.mu.Unlock()
				time.Sleep(poll)
				synctest.Wait()
				sampled := map[int]bool{wts[0].target.PID: true, replaced: true}
				if n := w.procSamples.Load() - samples; n != int64(len(sampled)) {
					t.Errorf("%d full samples of processes for the targets of %d; want one a process", n, len(sampled))
				}
				for i, wt := range wts {
					want := int64(1)
					if i == 0 || wt.target.PID == replaced {
						want = 2
					}
					if n := full(wt); n != want {
						t.Errorf("%s (pid %d): %d full samples; want %d", wt.target.Key, wt.target.PID, n, want)
					}
				}
				time.Sleep(poll)
				synctest.Wait()
				for _, wt := range wts {
					if wt.target.PID == replaced && full(wt) != 2 {
						t.Errorf("%s: sampled in full again while the new process runs unchanged", wt.target.Key)
					}
				}

				stop()
				w.idleMu.Lock()
				groups = len(w.idle)
				w.idleMu.Unlock()
				if groups != 0 {
					t.Errorf("%d idle groups once every target is stopped; want none", groups)
				}
			})
		})
	}
}

// TestIdle_restartOfAProcessServingManyTargets restarts, on its port, a
// process that several targets without triggers reach (one URL path
// each): each target notices the restart, though its process's stat is
// read once a poll for all of them.
func TestIdle_restartOfAProcessServingManyTargets(t *testing.T) {
	leaky := startExample(t, "leaky")
	const n = 5
	var urls []string
	for i := range n {
		urls = append(urls, fmt.Sprintf("%s/t%d", leaky.URL, i))
	}
	const poll = 200 * time.Millisecond
	w, _ := newWatcher(t, urls, config.Settings{Poll: poll, Every: time.Hour})
	reads := &statCounter{reads: map[int]int{}, replaced: map[int]bool{}}
	w.statPID = reads.read
	wts := runTriggers(t, w)
	pids := func() map[int]int {
		w.mu.Lock()
		defer w.mu.Unlock()
		out := map[int]int{}
		for _, wt := range wts {
			out[wt.sampler.pid()]++
		}
		return out
	}
	first := leaky.PID()
	testserver.WaitFor(t, time.Minute, "every target to find the example's process", func() (map[int]int, bool) {
		p := pids()
		return p, p[first] == n
	})
	again := restartExample(t, leaky, "leaky", leaky.URL)
	testserver.WaitFor(t, time.Minute, "every target to see the restart", func() (float64, bool) {
		r := testutil.ToFloat64(w.metrics.restarts.WithLabelValues("false"))
		return r, r >= n && pids()[again.PID()] == n
	})
	if r := testutil.ToFloat64(w.metrics.restarts.WithLabelValues("false")); r != n {
		t.Errorf("%d restarts counted for %d targets of one restarted process; want %d", int(r), n, n)
	}
}
