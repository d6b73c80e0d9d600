package watch

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/sysmem"
	"github.com/heapscope/heapscope/internal/target"
	"github.com/heapscope/heapscope/internal/trigger"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// watchTriggers samples the target every poll interval, and at once when
// the kernel says its cgroup crossed a memory threshold, and captures a
// bundle when one of its rules fires. It also notices restarts, and an OOM
// kill before one marks the last bundle before it. A local target without
// triggers has no loop of its own: its idle group checks it (joinIdle).
func (w *Watcher) watchTriggers(ctx context.Context, wt *watched) {
	t := wt.target
	rules, err := rulesOf(t)
	if err != nil {
		// The configuration was checked when read: not expected.
		w.log.Error("triggers", "target", t.Key, "err", err)
		return
	}
	src := w.newSampler(wt, rules)
	w.mu.Lock()
	wt.sampler = src
	w.mu.Unlock()
	if len(rules) == 0 && !src.local() {
		return
	}
	states := make([]trigger.State, len(rules))
	tick := time.NewTicker(t.Settings.Poll)
	defer tick.Stop()
	var (
		prev     trigger.Sample
		havePrev bool
		notify   <-chan struct{}
		armedFor uint64 // the threshold notify was registered for
	)
	stopNotify := func() {}
	defer func() { stopNotify() }()
	var fresh trigger.Sample // a scheduled run's measurement, once
	for {
		smp, err := src.sample(ctx)
		if err == nil && fresh.Known != 0 {
			smp.Merge(fresh)
			fresh = trigger.Sample{}
		}
		switch {
		case err != nil:
			if ctx.Err() == nil {
				w.log.Debug("sample", "target", t.Key, "err", err)
			}
		default:
			if havePrev {
				w.noteRestart(ctx, wt, prev, smp)
			}
			if !havePrev {
				w.sayUnarmed(wt, rules, smp)
			}
			prev, havePrev = smp, true
			if smp.Has(trigger.KnownMemoryLimit) {
				w.mu.Lock()
				wt.limit = float64(smp.MemoryLimit)
				w.mu.Unlock()
			}
			for i, r := range rules {
				f, fired := states[i].Observe(r, smp)
				if !fired {
					continue
				}
				w.metrics.triggers.WithLabelValues(f.Expr).Inc()
				w.log.Warn("trigger fired", "target", t.Key, "expr", f.Expr, "value", trigger.FormatValue(f.Value, f.Unit), "threshold", trigger.FormatValue(f.Threshold, f.Unit))
				w.bundle(ctx, wt, f)
			}
			// The kernel's notification, for the first memory rule with
			// a share of the limit: the capture starts within a second
			// of the crossing instead of at the next poll.
			if th := memoryThreshold(rules, smp); th > 0 && th != armedFor && src.cgroup != nil {
				stopNotify()
				nctx, cancel := context.WithCancel(ctx)
				stopNotify = cancel
				if ch, err := trigger.WatchMemory(nctx, *src.cgroup, th); err == nil {
					notify, armedFor = ch, th
				} else {
					w.log.Debug("memory notification unavailable; polling", "target", t.Key, "err", err)
					armedFor = th
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-notify:
		case fresh = <-wt.fresh:
		}
	}
}

// sayUnarmed, at the target's first sample, logs each trigger that can
// never fire on it (a share of a limit the target does not have) and
// keeps it in the target's health, which the pages show.
func (w *Watcher) sayUnarmed(wt *watched, rules []trigger.Rule, smp trigger.Sample) {
	var unarmed []string
	for _, r := range rules {
		if why := r.CannotFire(smp); why != "" {
			unarmed = append(unarmed, r.Expr.String()+": "+why)
			w.log.Warn("trigger cannot fire", "target", wt.target.Key, "expr", r.Expr.String(), "why", why)
		}
	}
	w.setHealth(wt, func(h *Health) { h.Unarmed = unarmed })
}

// bundle captures a trigger's bundle and tells the webhook.
func (w *Watcher) bundle(ctx context.Context, wt *watched, f trigger.Firing) {
	o := occasion{slot: f.At, firing: &f}
	if fl := w.opts.Fleet; fl != nil {
		key := wt.target.Key
		if !fl.Owns(key) {
			w.log.Info("trigger fired as the target moved to another watcher: no bundle here", "target", key, "expr", f.Expr)
			return
		}
		o.guard = fl.Holds(key)
	}
	e, _, err := w.capture(ctx, wt, o)
	if err != nil {
		return
	}
	w.log.Warn("bundle captured", "target", wt.target.Key, "expr", f.Expr, "path", e.Path,
		"capture_seconds", e.CaptureSeconds)
	w.notify(Event{
		Text: fmt.Sprintf("heapscope: %s on %s; bundle %s, complete %s after the crossing",
			f, wt.target.Key, e.Path, humanize.Seconds(e.CaptureSeconds)),
		Kind: "bundle", Target: wt.target.Key, Labels: wt.target.Labels, Time: f.At,
		Trigger: f.Expr, Value: f.Value, Threshold: f.Threshold, Path: e.Path, CaptureSeconds: e.CaptureSeconds,
		Findings: w.findingLines(e),
	})
}

// findingLines are a stored capture's leading findings, one line each.
func (w *Watcher) findingLines(e store.Entry) []string {
	h, err := w.opts.Store.History(store.Query{Target: e.Target, Since: e.Time.Add(-time.Second)})
	if err != nil {
		return nil
	}
	var lines []string
	for _, f := range h.Findings {
		if f.Path == e.Path && len(lines) < 3 {
			lines = append(lines, fmt.Sprintf("%s: %s (%s)", f.Severity, f.Title, f.Where))
		}
	}
	return lines
}

// noteRestart records a restart of the target between two samples; after
// an OOM kill, the last bundle before it is marked as the one before the
// kill. A pod's restarts are its container's status's (podRestarted):
// between its samples only an OOM kill in its cgroup counts.
func (w *Watcher) noteRestart(ctx context.Context, wt *watched, prev, cur trigger.Sample) {
	if wt.target.Pod != nil {
		prev.Known &^= trigger.KnownPID | trigger.KnownStart
	}
	r := trigger.DetectRestart(prev, cur)
	if !r.Restarted && !r.OOMKilled() {
		return
	}
	if r.Restarted {
		w.mu.Lock()
		again := sameProcess(wt.restartedTo, cur)
		wt.restartedTo = cur
		w.mu.Unlock()
		if again && !r.OOMKilled() {
			// The restart already noted, told again by a sample that
			// knows the new process better (its PID, where the last
			// still had the old one's beside the new start time).
			return
		}
	}
	w.recordRestart(ctx, wt, cur.Time, r.Restarted, r.OOMKilled(), r.Reason)
}

// sameProcess reports whether two samples are of one process: the same
// start time when both know it (a sample may take its PID from one
// process and its start time from the next, while one replaces the
// other), else the same PID.
func sameProcess(a, b trigger.Sample) bool {
	if a.Has(trigger.KnownStart) && b.Has(trigger.KnownStart) {
		return a.Start.Sub(b.Start).Abs() <= time.Second
	}
	return a.Has(trigger.KnownPID) && b.Has(trigger.KnownPID) && a.PID == b.PID
}

// podRestarted records that a pod's container restarted, as its status
// says: after an OOM kill, the last bundle before the run ended is
// marked as the one before the kill, unless the kill was already seen in
// the container's cgroup.
func (w *Watcher) podRestarted(ctx context.Context, wt *watched, st config.PodStatus, restarts int32) {
	reason := fmt.Sprintf("container restart %d", restarts)
	at := st.LastFinishedAt
	if st.LastTermination != "" {
		reason += "; its last run ended " + st.LastTermination
		if !at.IsZero() {
			reason += " at " + at.UTC().Format(time.RFC3339)
		}
	}
	if at.IsZero() {
		at = w.opts.now()
	}
	oom := st.OOMKilled()
	w.mu.Lock()
	seen := oom && !wt.lastOOM.IsZero() && wt.lastOOM.After(at.Add(-podOOMSlack))
	w.mu.Unlock()
	w.recordRestart(ctx, wt, at, true, oom && !seen, reason)
}

// podOOMSlack is how far before a pod's OOM-killed run ended (as its
// status says) an OOM kill seen in its cgroup is the same kill.
const podOOMSlack = time.Minute

// recordRestart counts, logs and announces a restart or an OOM kill at
// time at; after an OOM kill it marks the last capture before it.
func (w *Watcher) recordRestart(ctx context.Context, wt *watched, at time.Time, restarted, oom bool, reason string) {
	w.metrics.restarts.WithLabelValues(fmt.Sprint(oom)).Inc()
	ev := Event{Kind: "restart", Target: wt.target.Key, Labels: wt.target.Labels, Time: at, OOMKill: oom,
		Text: fmt.Sprintf("heapscope: %s restarted (%s)", wt.target.Key, reason)}
	if oom {
		w.mu.Lock()
		wt.lastOOM = at
		w.mu.Unlock()
		ev.Text = fmt.Sprintf("heapscope: %s: OOM kill (%s)", wt.target.Key, reason)
		if e, ok, err := w.opts.Store.MarkBeforeOOM(wt.target.Key, at); err != nil {
			w.log.Error("mark the capture before the OOM kill", "target", wt.target.Key, "err", err)
		} else if ok {
			ev.Path = e.Path
			ev.Text += "; the last capture before it: " + e.Path
		}
	}
	if restarted {
		w.log.Warn("target restarted", "target", wt.target.Key, "oom_kill", oom, "reason", reason)
	} else {
		w.log.Warn("OOM kill in the target's cgroup", "target", wt.target.Key, "reason", reason)
	}
	w.record(ev, reason)
}

// record stores an availability event (down, up, restart; a restart
// after an OOM kill as one) in the store, then announces it: pages and
// health read what happened between captures from the store, not from
// the log. A store that refuses it is logged; the webhook still hears.
func (w *Watcher) record(ev Event, detail string) {
	kind := ev.Kind
	if kind == "restart" && ev.OOMKill {
		kind = store.EventOOMKill
	}
	if err := w.opts.Store.AddEvent(store.TargetEvent{Target: ev.Target, Time: ev.Time, Kind: kind, Detail: detail}); err != nil {
		w.log.Error("store the target's event", "target", ev.Target, "kind", kind, "err", err)
	}
	w.notify(ev)
}

// notify queues an event for the webhook, if any; delivery runs beside
// the caller (see outbox), which goes on at once.
func (w *Watcher) notify(ev Event) {
	if w.outbox != nil {
		w.outbox.post(ev)
	}
}

func rulesOf(t config.Target) ([]trigger.Rule, error) {
	var rules []trigger.Rule
	for _, tc := range t.Settings.Triggers {
		r, err := trigger.NewRule(tc.Expr, tc.Hysteresis, tc.Cooldown)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tc.Pos, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// memoryThreshold is the byte count at which the first memory rule with a
// share of the limit fires, for the kernel's notification; 0 when none.
func memoryThreshold(rules []trigger.Rule, smp trigger.Sample) uint64 {
	if !smp.Has(trigger.KnownMemoryLimit) {
		return 0
	}
	for _, r := range rules {
		if b, ok := r.Expr.NotifyThreshold(smp.MemoryLimit); ok {
			return b
		}
	}
	return 0
}

// sampler reads a target's figures: /proc and its cgroup when the target
// runs on this machine, /metrics otherwise (and, when rules need them, for
// what /proc lacks). The process found on the target's port is kept until
// it can no longer be read: finding it scans every socket of the machine,
// which a fleet of targets polled every few seconds cannot afford.
type sampler struct {
	key         string
	given       int // the configured PID
	port        int
	needMetrics bool
	// clientOpts make client, at its first use: an idle target's
	// sampler may never need one.
	clientOpts target.Options
	clientOnce sync.Once
	client     *target.Client
	limit      uint64
	// container gives a pod's container's cgroup on this node as its
	// status says now; nil for other targets, "" dir when unknown.
	container func() (mount, dir string)

	found atomic.Int64 // the PID found on the port; 0 when unknown
	// cgroup is the process's cgroup, for the kernel's notification of
	// a memory threshold: kept only when the target has triggers.
	cgroup *sysmem.Cgroup
	cgPID  int // whose cgroup cgroup is
	// listeners is the watcher's, read at most once a poll.
	listeners *sysmem.Listeners
	poll      time.Duration
	// seenPID and seenStart are the process unchanged last read, and
	// its start after boot in clock ticks.
	seenPID   int
	seenStart uint64
	// full counts the full samples, for tests.
	full atomic.Int64
	// sampleProc, when set, samples a process in place of trigger.Local: an
	// idle group's poll shares one sample of a process among the
	// targets it serves.
	sampleProc func(ctx context.Context, pid int) (trigger.Sample, error)
}

func (w *Watcher) newSampler(wt *watched, rules []trigger.Rule) *sampler {
	t := wt.target
	s := &sampler{key: t.Key, given: t.PID, limit: uint64(max(0, t.Settings.MemoryLimit)), needMetrics: len(rules) > 0,
		listeners: w.listeners, poll: t.Settings.Poll}
	if t.Pod != nil {
		s.container = func() (string, string) {
			w.mu.Lock()
			defer w.mu.Unlock()
			return wt.pod.CgroupMount, wt.pod.Cgroup
		}
	}
	if port, ok := target.LoopbackPort(t.URL); ok {
		s.port = port
	}
	s.clientOpts = target.Options{BaseURL: t.URL.String(), PprofPath: t.Settings.PprofPath,
		MetricsPath: t.Settings.MetricsPath, Timeout: t.Settings.Poll, TimeoutSetting: "poll", MaxBody: 4 << 20}
	return s
}

// metricsClient is the client of the target's /metrics, made at its
// first use; nil when the target's URL cannot have one.
func (s *sampler) metricsClient() *target.Client {
	s.clientOnce.Do(func() {
		if c, err := target.New(s.clientOpts); err == nil {
			s.client = c
		}
	})
	return s.client
}

// local reports whether the target's memory is read on this machine:
// its process's, or its container's cgroup.
func (s *sampler) local() bool {
	if s.container != nil {
		if _, dir := s.container(); dir != "" {
			return true
		}
	}
	return s.given > 0 || s.port > 0
}

// pid is the target's process as last seen: the configured one, or the
// one found on its port; 0 when unknown.
func (s *sampler) pid() int {
	if s.given > 0 {
		return s.given
	}
	return int(s.found.Load())
}

// sample reads the figures once. A local process that has gone is looked
// for again on its port at the next sample: the restart shows as a new
// PID and start time.
func (s *sampler) sample(ctx context.Context) (trigger.Sample, error) {
	s.full.Add(1)
	if s.container != nil {
		if mount, dir := s.container(); dir != "" {
			smp, err := trigger.Container{Mount: mount, Dir: dir}.Sample(ctx)
			if err == nil {
				if s.cgroup == nil || s.cgroup.Dir != dir {
					if cg, cerr := sysmem.CgroupAt(mount, dir); cerr == nil {
						s.cgroup = &cg
					}
				}
				s.fillFromMetrics(ctx, &smp)
				return smp, nil
			}
		}
	} else if s.given > 0 || s.port > 0 {
		pid := s.pid()
		if pid == 0 {
			p, err := s.listeners.PID(s.port, s.poll)
			if err != nil {
				return trigger.Sample{}, err
			}
			pid = p
			s.found.Store(int64(p))
		}
		smp, err := s.sampleLocal(ctx, pid)
		if err != nil && s.given == 0 {
			// Gone: whatever serves the port now is the target
			// restarted, looked for at once rather than a poll later.
			s.found.Store(0)
			if p, lerr := s.listeners.PID(s.port, s.poll); lerr == nil && p != pid {
				pid = p
				s.found.Store(int64(p))
				smp, err = s.sampleLocal(ctx, pid)
			}
		}
		if err == nil {
			if s.needMetrics && s.cgPID != pid {
				if cg, cerr := (sysmem.Proc{}).Cgroup(pid); cerr == nil {
					s.cgroup, s.cgPID = &cg, pid
				}
			}
			if s.needMetrics {
				s.fillFromMetrics(ctx, &smp)
			}
			return smp, nil
		}
		s.found.Store(0)
		if s.given > 0 {
			return trigger.Sample{}, err
		}
	}
	c := s.metricsClient()
	if c == nil {
		return trigger.Sample{}, fmt.Errorf("no way to sample %s", s.key)
	}
	b, err := c.Metrics(ctx)
	if err != nil {
		return trigger.Sample{}, err
	}
	smp := trigger.RemoteSample(b, s.limit)
	smp.Time = time.Now()
	return smp, nil
}

// sampleLocal samples process pid from /proc and its cgroup.
func (s *sampler) sampleLocal(ctx context.Context, pid int) (trigger.Sample, error) {
	if s.sampleProc != nil {
		return s.sampleProc(ctx, pid)
	}
	return trigger.Local{PID: pid}.Sample(ctx)
}

// unchanged reads the target's process's /proc/PID/stat through stat
// and reports whether it is the process read last time, as the same
// process. It is false when the PID is unknown, at the first look at a
// PID, and once the process has gone or another has taken its PID; the
// caller then samples in full.
func (s *sampler) unchanged(stat statFunc) bool {
	pid := s.pid()
	if pid == 0 {
		s.seenPID = 0
		return false
	}
	st, err := stat(pid)
	if err != nil {
		s.seenPID = 0
		return false
	}
	same := s.seenPID == pid && st.StartTime == s.seenStart
	s.seenPID, s.seenStart = pid, st.StartTime
	return same
}

// lookup looks for the process on the target's port when it is not
// known, and reports whether it was found.
func (s *sampler) lookup() bool {
	if s.pid() != 0 {
		return true
	}
	if s.given > 0 || s.port == 0 {
		return false
	}
	p, err := s.listeners.PID(s.port, s.poll)
	if err != nil {
		return false
	}
	s.found.Store(int64(p))
	return true
}

// fillFromMetrics adds what /proc does not know (goroutines, GC share)
// from /metrics when the target serves it.
func (s *sampler) fillFromMetrics(ctx context.Context, smp *trigger.Sample) {
	c := s.metricsClient()
	if c == nil {
		return
	}
	b, err := c.Metrics(ctx)
	if err != nil {
		return
	}
	smp.Merge(trigger.RemoteSample(b, 0))
}
