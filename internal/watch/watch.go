// Package watch profiles services continuously: each target on a schedule
// (a stable offset within its period, so a fleet is not captured at once),
// and on triggers (memory near the container's limit, goroutines, GC share…)
// with a bundle that is diffed against the target's last healthy run. Every
// capture is a run directory made by internal/run and committed to the
// store, which indexes it.
//
// Each target has its own goroutines: a target that does not answer holds
// none of the concurrency limit's slots, one that answers then hangs holds
// one for at most its window and timeout, and neither holds up the
// schedule of another.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heapscope/heapscope/internal/clock"
	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/sysmem"
	"github.com/heapscope/heapscope/internal/trigger"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// Options configure a Watcher.
type Options struct {
	// Config lists the targets and their settings.
	Config *config.Config
	// Store keeps the captures.
	Store store.Store
	// Version is heapscope's, recorded in each run.
	Version string
	// Log receives one line per capture, trigger and problem; slog's
	// default logger when nil.
	Log *slog.Logger
	// Fleet shares the targets with other watchers of the same store;
	// nil, this watcher captures them all.
	Fleet Fleet
	// BundleWindow is how long a trigger's bundle collects allocations and
	// the CPU profile: short, because the moment matters (DefaultBundleWindow).
	BundleWindow time.Duration
	// now replaces time.Now (tests).
	now func() time.Time
}

// DefaultBundleWindow is a trigger bundle's window.
const DefaultBundleWindow = 5 * time.Second

// DefaultMemoryLimit is the soft memory limit heapscope watch sets itself
// when GOMEMLIMIT does not: the garbage collector works harder as the
// heap nears it rather than let captures in flight double it (GOGC's
// headroom), so a watcher of hundreds of targets stays within a small
// container's memory.
const DefaultMemoryLimit = 256 << 20

// Watcher runs the captures of a configuration into a store.
type Watcher struct {
	opts Options
	log  *slog.Logger
	sem  chan struct{}
	// analyses holds one slot per CPU: the captures' windows overlap
	// by the dozen, their analyses (decoded profiles, a CPU's work)
	// take turns.
	analyses chan struct{}
	// longTermSlot lets one long-term diagnosis run at a time, beside
	// the captures' analyses: it reads a week of runs from the store,
	// and must not hold a capture's analysis slot while it does (a
	// watcher gaining a fleet's worth of targets starts dozens).
	longTermSlot chan struct{}
	metrics      *metrics
	outbox       *outbox // nil without a webhook
	// listeners finds the processes on the local targets' ports: one
	// reading of the machine's sockets a poll, shared by all.
	listeners *sysmem.Listeners
	// idle are the loops of the idle targets, by poll interval
	// (guarded by idleMu; see joinIdle).
	idleMu sync.Mutex
	idle   map[time.Duration]*idleGroup
	// statPID replaces the reading of /proc/PID/stat (tests).
	statPID statFunc
	// procSamples counts the idle groups' full samples of a process,
	// for tests.
	procSamples atomic.Int64

	mu      sync.Mutex
	targets map[string]*watched
	loops   sync.WaitGroup
	// commits is how the store has taken the captures (guarded by mu).
	commits StoreHealth
}

// watched is one target and its goroutines.
type watched struct {
	target config.Target
	ctx    context.Context // the target's, ended when it stops being watched
	cancel context.CancelFunc
	// owned says whether this watcher captures the target (always, out
	// of a fleet); gained tells the schedule it has just come to.
	owned  bool
	gained chan struct{}
	// since is when this watcher began to watch the target: in a fleet,
	// it catches up no slot before it.
	since        time.Time
	stopTriggers context.CancelFunc
	// fresh passes a scheduled run's MemStats, read after a forced GC,
	// to the triggers: the heap after GC they project.
	fresh chan trigger.Sample
	// sampler is the triggers' (guarded by Watcher.mu); a capture takes
	// the PID it found, rather than looking for it again.
	sampler *sampler
	// Guarded by Watcher.mu:
	health       Health
	lastLongTerm time.Time        // when the long-term diagnosis last ran
	limit        float64          // the memory limit last seen by the triggers, bytes
	pod          config.PodStatus // the pod's status now (target.Pod's at start)
	lastOOM      time.Time        // when the last OOM kill noted was
	// restartedTo is the process the last restart noted came back as
	// (its PID and start time, as far as they were known).
	restartedTo trigger.Sample
	// told is what the webhook was told of the target's problems, by
	// cause; nil before the first look.
	told map[string]told
	// turn lets one capture of the target run at a time: a bundle and a
	// scheduled run of one process collide (its CPU profile is taken by
	// one only). running is the capture that holds it (guarded by
	// Watcher.mu), which a bundle pre-empts when it is a scheduled run.
	turn    chan struct{}
	running *running
}

// running is the capture that holds a target's turn.
type running struct {
	scheduled bool
	cancel    context.CancelCauseFunc
}

// New checks the options and makes a Watcher.
func New(opts Options) (*Watcher, error) {
	if opts.Config == nil || opts.Store == nil {
		return nil, errors.New("watch: a configuration and a store are needed")
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.BundleWindow <= 0 {
		opts.BundleWindow = DefaultBundleWindow
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	n := opts.Config.Concurrency
	if n <= 0 {
		n = config.DefaultConcurrency
	}
	w := &Watcher{
		opts:         opts,
		log:          opts.Log,
		sem:          make(chan struct{}, n),
		analyses:     make(chan struct{}, runtime.GOMAXPROCS(0)),
		longTermSlot: make(chan struct{}, 1),
		metrics:      newMetrics(),
		targets:      map[string]*watched{},
		listeners:    &sysmem.Listeners{},
	}
	if h := opts.Config.Webhook; h != nil && h.URL != "" {
		// An alert fires until the next time it is said, and a while.
		hook := &Webhook{URL: h.URL, Timeout: h.Timeout, Retries: h.Retries, Format: h.Format, Hold: 2 * max(h.RepeatInterval, time.Hour)}
		w.outbox = newOutbox(hook, w.log, w.metrics.webhook)
	}
	return w, nil
}

// Once captures every target once, at the same time within the
// concurrency limit, diagnoses each over its stored runs (see
// diagnoseLongTerm), and returns when all are stored: the CronJob form.
// The error names the targets that could not be captured.
func (w *Watcher) Once(ctx context.Context) error {
	targets, err := w.opts.Config.Targets(ctx)
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		return errors.New("watch: no targets to capture")
	}
	w.adopt()
	w.update(ctx, targets, false)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, t := range w.watchedList() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := w.capture(ctx, t, scheduled(w.opts.now())); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", t.target.Key, err))
				mu.Unlock()
				return
			}
			// The CronJob form has no hour to wait for: each run
			// diagnoses the stored series too.
			w.diagnoseLongTerm(ctx, t)
		}()
	}
	wg.Wait()
	w.updateStoreSize()
	w.drainOutbox()
	return errors.Join(errs...)
}

// Run watches until ctx ends: schedules, triggers, retention. In-flight
// captures are abandoned when ctx ends (their temporary directories
// removed), so the store holds only complete captures.
//
// It returns an error, having stopped everything, when the targets cannot
// be followed (a kubernetes section that cannot reach its API server).
func (w *Watcher) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.adopt()
	var bg sync.WaitGroup
	bg.Go(func() { w.retain(ctx) })
	if w.opts.Fleet != nil {
		bg.Go(func() { w.followFleet(ctx) })
	}
	err := w.opts.Config.Watch(ctx, func(ts []config.Target) { w.update(ctx, ts, true) })
	if err == nil || ctx.Err() != nil {
		<-ctx.Done()
		err = nil
	}
	cancel()
	w.stopAll()
	bg.Wait()
	w.drainOutbox()
	return err
}

// update makes the watched set the given targets: new ones start, gone ones
// stop, changed ones restart with their new settings.
func (w *Watcher) update(ctx context.Context, ts []config.Target, start bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[string]bool{}
	for _, t := range ts {
		seen[t.Key] = true
		if old, ok := w.targets[t.Key]; ok {
			if reflect.DeepEqual(withoutStatus(old.target), withoutStatus(t)) {
				if t.Pod != nil {
					w.podStatus(ctx, old, *t.Pod, start)
				}
				continue
			}
			old.cancel()
			delete(w.targets, t.Key)
		}
		wt := &watched{target: t, health: Health{Target: t.Key}, fresh: make(chan trigger.Sample, 1),
			gained: make(chan struct{}, 1), turn: make(chan struct{}, 1), since: w.opts.now(), stopTriggers: func() {}}
		if t.Pod != nil {
			wt.pod = *t.Pod
		}
		tctx, cancel := context.WithCancel(ctx)
		wt.ctx, wt.cancel = tctx, cancel
		w.targets[t.Key] = wt
		if start {
			w.sayWatching(t)
			w.loops.Go(func() { w.schedule(tctx, wt) })
			w.reassign(wt)
		}
	}
	for key, wt := range w.targets {
		if !seen[key] {
			wt.cancel()
			delete(w.targets, key)
			w.log.Info("target removed", "target", key)
		}
	}
	w.metrics.targets.Set(float64(len(w.targets)))
}

// sayWatching logs a target as watching begins: when its first
// scheduled capture is, and its triggers.
func (w *Watcher) sayWatching(t config.Target) {
	every := t.Settings.Every
	triggers := make([]string, 0, len(t.Settings.Triggers))
	for _, tc := range t.Settings.Triggers {
		triggers = append(triggers, tc.Expr)
	}
	attrs := []any{"target", t.Key, "every", every.String(),
		"first_capture", NextSlot(w.opts.now(), every, Offset(t.Key, every)).UTC().Format(time.RFC3339)}
	if len(triggers) > 0 {
		attrs = append(attrs, "triggers", strings.Join(triggers, ", "))
	} else {
		attrs = append(attrs, "triggers", "none")
	}
	if w.opts.Fleet != nil {
		attrs = append(attrs, "fleet", "captured by whichever watcher owns it")
	}
	w.log.Info("watching", attrs...)
}

// withoutStatus is a target less its pod's status, which changes while
// the target stays the same.
func withoutStatus(t config.Target) config.Target {
	if t.Pod != nil {
		t.Pod = &config.PodStatus{}
	}
	return t
}

// podStatus takes a pod's new status (w.mu held): where its container's
// cgroup is now, and, when its container restarted while watched (live),
// the restart recorded.
func (w *Watcher) podStatus(ctx context.Context, wt *watched, st config.PodStatus, live bool) {
	prev := wt.pod
	wt.pod = st
	if !live || st.Restarts <= prev.Restarts || !wt.owned {
		return // in a fleet, the target's owner records the restart
	}
	w.loops.Go(func() { w.podRestarted(ctx, wt, st, st.Restarts) })
}

// drainOutbox lets the webhook's queued events go out, for at most
// outboxDrain.
func (w *Watcher) drainOutbox() {
	if w.outbox != nil {
		w.outbox.drain(outboxDrain)
	}
}

func (w *Watcher) stopAll() {
	w.mu.Lock()
	for _, wt := range w.targets {
		wt.cancel()
	}
	w.mu.Unlock()
	w.loops.Wait()
}

func (w *Watcher) watchedList() []*watched {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*watched, 0, len(w.targets))
	for _, wt := range w.targets {
		out = append(out, wt)
	}
	return out
}

// schedule captures the target at each of its slots until ctx ends. The
// capture of a slot runs beside the schedule, so that the next slot comes
// on time whatever the capture does: a slot that comes while the capture
// of an earlier one still waits for a concurrency slot or still runs is
// missed, and counted then (missSlot).
func (w *Watcher) schedule(ctx context.Context, wt *watched) {
	if w.opts.Fleet != nil {
		w.scheduleShared(ctx, wt)
		return
	}
	every := wt.target.Settings.Every
	offset := Offset(wt.target.Key, every)
	var c inFlight
	defer c.wait()
	for slot := NextSlot(w.opts.now(), every, offset); ; slot = w.after(slot, every, offset) {
		w.setHealth(wt, func(h *Health) { h.NextSlot = slot })
		if !clock.SleepUntil(ctx, slot, w.opts.now) {
			return
		}
		if c.busy() {
			w.missSlot(wt, slot, c.waiting())
			continue
		}
		c.start(func(admitted func()) {
			o := scheduled(slot)
			o.admitted = admitted
			if _, res, err := w.capture(ctx, wt, o); err == nil {
				w.afterScheduled(ctx, wt, res)
			}
		})
	}
}

// after is the slot that follows slot: the next one, or the first to come
// when the clock jumped past it.
func (w *Watcher) after(slot time.Time, every, offset time.Duration) time.Time {
	next := slot.Add(every)
	if now := NextSlot(w.opts.now(), every, offset); now.After(next) {
		return now
	}
	return next
}

// missSlot counts the target's slot missed, the moment it comes while the
// capture of an earlier slot is not over: waiting says whether that one
// still waits for a concurrency slot (too many captures at once for
// --concurrency) or runs (the target is slow to answer).
func (w *Watcher) missSlot(wt *watched, slot time.Time, waiting bool) {
	w.metrics.missed.Inc()
	why := "the capture of an earlier slot is still running"
	if waiting {
		why = "the capture of an earlier slot is still waiting for one of the concurrency slots"
	}
	w.log.Warn("slot missed: "+why, "target", wt.target.Key, "slot", slot.UTC().Format(time.RFC3339Nano))
}

// inFlight is the capture a schedule has started, if any: one at a time
// per target.
type inFlight struct {
	done     chan struct{} // closed when it ends; nil before the first
	admitted atomic.Bool   // it holds a concurrency slot (or ended)
}

// start runs f beside the schedule; f calls admitted once it holds its
// concurrency slot.
func (c *inFlight) start(f func(admitted func())) {
	done := make(chan struct{})
	c.done = done
	c.admitted.Store(false)
	go func() {
		defer close(done)
		defer c.admitted.Store(true)
		f(func() { c.admitted.Store(true) })
	}()
}

// busy says whether the capture started last has not ended.
func (c *inFlight) busy() bool {
	if c.done == nil {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// waiting says whether the capture started last still waits for its
// concurrency slot.
func (c *inFlight) waiting() bool { return c.busy() && !c.admitted.Load() }

// ended is closed when the capture started last ends; nil (never) when
// there is none.
func (c *inFlight) ended() <-chan struct{} { return c.done }

// wait waits for the capture started last to end.
func (c *inFlight) wait() {
	if c.done != nil {
		<-c.done
	}
}

// afterScheduled hands a scheduled run's measurement to the triggers and
// starts the long-term diagnosis when it is due, beside the schedule:
// it waits for an analysis slot, and the next slot must not wait for it.
func (w *Watcher) afterScheduled(ctx context.Context, wt *watched, res *result.Run) {
	w.freshMeasurement(wt, res)
	if w.longTermDue(wt) {
		w.loops.Go(func() { w.diagnoseLongTerm(ctx, wt) })
	}
}

// freshMeasurement hands a scheduled run's closing MemStats, read after a
// forced GC, to the target's triggers, unless they have one waiting.
func (w *Watcher) freshMeasurement(wt *watched, res *result.Run) {
	if res == nil || res.MemStats.SysBytes == 0 {
		return
	}
	m := res.MemStats
	var s trigger.Sample
	s.Time = w.opts.now()
	s.AddMemStats(gcstats.MemStats{HeapAlloc: m.AllocBytes, Sys: m.SysBytes, HeapReleased: m.HeapReleasedBytes,
		HeapObjects: m.HeapObjects, NumGC: m.NumGC}, true)
	select {
	case wt.fresh <- s:
	default:
	}
}

func (w *Watcher) setHealth(wt *watched, f func(*Health)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(&wt.health)
}

// NewLogger returns the logger of watch's lines on w: "text" (slog's
// key=value lines) or "json" (one object a line, for a log pipeline).
func NewLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, fmt.Errorf("--log-format %q: choose text or json", format)
}

// retain applies the retention policy every hour, and at start.
func (w *Watcher) retain(ctx context.Context) {
	r := w.opts.Config.Retention
	for {
		if r.MaxAge > 0 || r.MaxSize > 0 {
			n, err := w.opts.Store.Retain(store.Retention{MaxAge: r.MaxAge, MaxBytes: r.MaxSize})
			if err != nil {
				w.log.Error("retention", "err", err)
			} else if n > 0 {
				w.log.Info("retention removed captures", "count", n)
			}
		}
		w.updateStoreSize()
		if !clock.SleepUntil(ctx, w.opts.now().Add(time.Hour), w.opts.now) {
			return
		}
	}
}

// adopt indexes the complete runs that a failed index write (or a
// crash) left in place unindexed, when the store can (store.Adopter),
// and logs each.
func (w *Watcher) adopt() {
	a, ok := w.opts.Store.(store.Adopter)
	if !ok {
		return
	}
	ad, err := a.Adopt()
	if err != nil {
		w.log.Error("adopt the runs left unindexed", "err", err)
		return
	}
	if ad.InUse {
		w.log.Warn("the store is open in another process: runs left unindexed, if any, were not looked for (heapscope store check reports them, --repair indexes them)",
			"store", w.opts.Store.String())
	}
	for _, e := range ad.Entries {
		w.log.Info("adopted a run left unindexed", "target", e.Target, "kind", e.Kind, "path", e.Path, "status", e.Status)
	}
	for _, p := range ad.Failed {
		w.log.Error("could not adopt a run left unindexed", "path", p.Path, "err", p.Detail)
	}
}

func (w *Watcher) updateStoreSize() {
	if n, err := w.opts.Store.Size(); err == nil {
		w.metrics.storeBytes.Set(float64(n))
	}
}
