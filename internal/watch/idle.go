package watch

import (
	"context"
	"time"

	"github.com/heapscope/heapscope/internal/sysmem"
	"github.com/heapscope/heapscope/internal/trigger"
)

// An idle target is a local one without triggers (its URL on a loopback
// address, or its PID given), not a pod: it is watched only for restarts
// and OOM kills. Its process is checked every poll, and while it runs as
// the same process that is one read of /proc/PID/stat. Idle targets have
// no goroutine of their own: one loop per poll interval (idleGroup) checks
// them all, and reads each /proc/PID/stat once a poll whatever the number
// of targets its process serves. A full sample (status, cgroup, environ)
// is taken only at a target's first poll, once its process is a new one
// or gone, and when a scheduled run has handed its measurement.

// idleGroup is the loop of the idle targets of one poll interval.
type idleGroup struct {
	every time.Duration
	// kick wakes the loop when a target joins: its first sample is not
	// a poll later.
	kick chan struct{}
	// Guarded by Watcher.idleMu:
	members map[*idleMember]struct{}
	joined  []*idleMember // not sampled yet
}

// idleMember is an idle target's state between polls: the process it
// last saw and the sample a restart is told from.
type idleMember struct {
	wt  *watched
	ctx context.Context // ends when the target stops being watched here
	src *sampler
	// prev is the last full sample, less what DetectRestart does not read.
	prev     trigger.Sample
	havePrev bool
}

// statFunc reads /proc/PID/stat.
type statFunc func(pid int) (sysmem.Stat, error)

// joinIdle (w.mu held) watches wt, whose triggers ctx runs, in its poll
// interval's idle group when it is an idle target, and reports whether it
// is; the group's loop starts with its first target and ends with its
// last.
func (w *Watcher) joinIdle(ctx context.Context, wt *watched) bool {
	t := wt.target
	if len(t.Settings.Triggers) > 0 || t.Pod != nil {
		return false
	}
	src := w.newSampler(wt, nil)
	wt.sampler = src
	if !src.local() {
		return true // nothing to watch between captures
	}
	m := &idleMember{wt: wt, ctx: ctx, src: src}
	w.idleMu.Lock()
	g := w.idle[t.Settings.Poll]
	if g == nil {
		g = &idleGroup{every: t.Settings.Poll, kick: make(chan struct{}, 1), members: map[*idleMember]struct{}{}}
		if w.idle == nil {
			w.idle = map[time.Duration]*idleGroup{}
		}
		w.idle[g.every] = g
		w.loops.Go(func() { w.runIdle(g) })
	}
	g.members[m] = struct{}{}
	g.joined = append(g.joined, m)
	w.idleMu.Unlock()
	wake(g.kick)
	context.AfterFunc(ctx, func() {
		w.idleMu.Lock()
		delete(g.members, m)
		w.idleMu.Unlock()
		wake(g.kick)
	})
	return true
}

// wake sends on a channel of one that may be full already.
func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// runIdle polls the group's targets every interval, and the ones that
// have just joined at once, until it has none.
func (w *Watcher) runIdle(g *idleGroup) {
	tick := time.NewTicker(g.every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			w.pollIdle(g, true)
		case <-g.kick:
			w.pollIdle(g, false)
		}
		w.idleMu.Lock()
		if len(g.members) == 0 {
			// Gone with its last target; one that joins later
			// makes a new group.
			delete(w.idle, g.every)
			w.idleMu.Unlock()
			return
		}
		w.idleMu.Unlock()
	}
}

// pollIdle checks the group's targets that have just joined, and all of
// them when all is set. Each /proc/PID/stat is read once for all the
// targets of its process.
func (w *Watcher) pollIdle(g *idleGroup, all bool) {
	w.idleMu.Lock()
	joined := g.joined
	g.joined = nil
	var ms []*idleMember
	if all {
		ms = make([]*idleMember, 0, len(g.members))
		for m := range g.members {
			ms = append(ms, m)
		}
	} else {
		ms = joined
	}
	w.idleMu.Unlock()
	r := &idleReads{w: w, stats: map[int]statResult{}, samples: map[int]sampleResult{}}
	for _, m := range ms {
		if m.ctx.Err() != nil {
			continue
		}
		w.checkIdle(m, r)
	}
}

// idleReads are the reads of one poll of an idle group, by process:
// each is read once for all the targets it serves.
type idleReads struct {
	w       *Watcher
	stats   map[int]statResult
	samples map[int]sampleResult
}

// statResult is a read of /proc/PID/stat, kept for one poll.
type statResult struct {
	st  sysmem.Stat
	err error
}

// sampleResult is a full sample of a process, kept for one poll.
type sampleResult struct {
	smp trigger.Sample
	err error
}

// stat reads /proc/PID/stat, once a poll.
func (r *idleReads) stat(pid int) (sysmem.Stat, error) {
	if v, ok := r.stats[pid]; ok {
		return v.st, v.err
	}
	st, err := r.w.readStat(pid)
	r.stats[pid] = statResult{st, err}
	return st, err
}

// sample samples process pid in full, once a poll: the targets of a
// process that has gone each look for its successor on their port.
func (r *idleReads) sample(ctx context.Context, pid int) (trigger.Sample, error) {
	if v, ok := r.samples[pid]; ok {
		return v.smp, v.err
	}
	r.w.procSamples.Add(1)
	smp, err := trigger.Local{PID: pid}.Sample(ctx)
	if ctx.Err() == nil {
		r.samples[pid] = sampleResult{smp, err}
	}
	return smp, err
}

// readStat reads /proc/PID/stat, through the tests' reader when they
// give one.
func (w *Watcher) readStat(pid int) (sysmem.Stat, error) {
	if w.statPID != nil {
		return w.statPID(pid)
	}
	return (sysmem.Proc{}).Stat(pid)
}

// checkIdle checks one idle target: nothing more while its process runs
// as the one last seen, a full sample and the restart noted otherwise.
// The process is read before the full sample, never after, so that one
// restarting in between shows in the sample and is seen at the next poll.
func (w *Watcher) checkIdle(m *idleMember, r *idleReads) {
	var fresh trigger.Sample
	select {
	case fresh = <-m.wt.fresh:
	default:
	}
	src := m.src
	if src.unchanged(r.stat) && m.havePrev && fresh.Known == 0 {
		return
	}
	if src.pid() == 0 && src.lookup() {
		src.unchanged(r.stat) // the process found, as it is before the sample
	}
	src.sampleProc = r.sample
	smp, err := src.sample(m.ctx)
	src.sampleProc = nil
	if err != nil {
		if m.ctx.Err() == nil {
			w.log.Debug("sample", "target", m.wt.target.Key, "err", err)
		}
		return
	}
	if fresh.Known != 0 {
		smp.Merge(fresh)
	}
	if m.havePrev {
		w.noteRestart(m.ctx, m.wt, m.prev, smp)
	}
	if smp.Has(trigger.KnownMemoryLimit) {
		w.mu.Lock()
		m.wt.limit = float64(smp.MemoryLimit)
		w.mu.Unlock()
	}
	m.prev, m.havePrev = restartFigures(smp), true
}

// restartFigures is what DetectRestart reads of a sample: an idle
// target keeps that alone between polls.
func restartFigures(s trigger.Sample) trigger.Sample {
	return trigger.Sample{Time: s.Time, Known: s.Known & (trigger.KnownPID | trigger.KnownStart | trigger.KnownOOMKills),
		PID: s.PID, Start: s.Start, OOMKills: s.OOMKills, Cgroup: s.Cgroup}
}
