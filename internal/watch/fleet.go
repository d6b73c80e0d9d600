package watch

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heapscope/heapscope/internal/fleet"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/shared"
)

// Fleet is a watcher's share of the targets when several watchers share
// one store (internal/fleet's Member): every watcher follows every
// target, but only the target's owner samples its triggers and captures
// its slots, and a slot is captured only once it is claimed.
type Fleet interface {
	// Owns says whether this watcher captures the target.
	Owns(key string) bool
	// Changes receives a value when the targets owned may have changed.
	Changes() <-chan struct{}
	// Lease is how long a watcher keeps its targets without renewing its
	// lease: they move within two of these when it dies.
	Lease() time.Duration
	// Claim claims a target's slot: true when it is this watcher's to
	// capture.
	Claim(ctx context.Context, key string, slot time.Time) (bool, error)
	// Done is what a claimed slot's capture is stored under: it marks
	// the slot captured in the transaction that stores the capture, and
	// fails (fleet.ErrClaimLost) when another watcher took the claim
	// over meanwhile, and the capture is dropped.
	Done(key string, slot time.Time) shared.Guard
	// Holds is what a bundle is stored under: it checks in the
	// transaction that stores the bundle that this watcher still owns
	// the target (fleet.ErrNotOwner otherwise).
	Holds(key string) shared.Guard
	// Release gives a claimed slot up after a failed capture.
	Release(ctx context.Context, key string, slot time.Time) error
	// Taken says whether a slot is captured, or claimed by a live
	// watcher: not missed, though too late for this one to claim.
	Taken(ctx context.Context, key string, slot time.Time) (bool, error)
}

// followFleet moves the targets' triggers to and from this watcher as
// the fleet's members change, until ctx ends.
func (w *Watcher) followFleet(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.opts.Fleet.Changes():
		}
		w.mu.Lock()
		for _, wt := range w.targets {
			w.reassign(wt)
		}
		w.mu.Unlock()
	}
}

// reassign (w.mu held) starts the target's triggers when this watcher
// has just come to own it, and tells its schedule, which captures the
// slot that went by if no one did; it stops them when the target has
// moved away. Captures in flight go on: their slots are claimed.
func (w *Watcher) reassign(wt *watched) {
	owns := w.opts.Fleet == nil || w.opts.Fleet.Owns(wt.target.Key)
	if owns == wt.owned {
		return
	}
	wt.owned = owns
	if !owns {
		wt.stopTriggers()
		w.log.Info("target moved to another watcher", "target", wt.target.Key)
		return
	}
	w.startTriggers(wt)
	if w.opts.Fleet != nil {
		select {
		case wt.gained <- struct{}{}:
		default:
		}
	}
}

// startTriggers (w.mu held) runs the target's trigger loop, or has its
// idle group check it when it is an idle target (joinIdle).
func (w *Watcher) startTriggers(wt *watched) {
	ctx, cancel := context.WithCancel(wt.ctx)
	wt.stopTriggers = cancel
	if w.joinIdle(ctx, wt) {
		return
	}
	w.loops.Go(func() { w.watchTriggers(ctx, wt) })
}

// scheduleShared is schedule for a watcher of a fleet: each slot the
// target's owner claims is captured, and a slot that went by while the
// target was moving to this watcher is captured late if no one did. As
// out of a fleet, a capture runs beside the schedule; a slot that comes
// while the capture of an earlier one is not over waits for it, and is
// missed, and counted, the moment it is later than two lease periods
// (lateBound): one measured later than a move takes is no longer that
// slot's measure.
func (w *Watcher) scheduleShared(ctx context.Context, wt *watched) {
	every := wt.target.Settings.Every
	offset := Offset(wt.target.Key, every)
	var c inFlight
	defer c.wait()
	capture := func(slot time.Time) {
		c.start(func(admitted func()) { w.captureSlot(ctx, wt, slot, admitted) })
	}
	next := NextSlot(w.opts.now(), every, offset)
	// pending is a slot that came while the last capture ran: it is
	// caught up when that one ends, and missed the moment it is later
	// than lateBound while that one still runs. A watcher resumed after
	// losing its lease ends its stale captures in seconds (their claims
	// were taken over), and the slots that came meanwhile are still its
	// to capture.
	var pending time.Time
	for {
		w.setHealth(wt, func(h *Health) { h.NextSlot = next })
		timer := time.NewTimer(next.Sub(w.opts.now()))
		var (
			ended    <-chan struct{}
			tooLate  <-chan time.Time
			lateness *time.Timer
		)
		if !pending.IsZero() {
			ended = c.ended()
			lateness = time.NewTimer(pending.Add(lateBound(w.opts.Fleet)).Sub(w.opts.now()))
			tooLate = lateness.C
		}
		stop := func() {
			timer.Stop()
			if lateness != nil {
				lateness.Stop()
			}
		}
		select {
		case <-ctx.Done():
			stop()
			return
		case <-wt.gained:
			stop()
			if !c.busy() {
				capture(next.Add(-every))
			}
			continue
		case <-ended:
			stop()
			capture(pending)
			pending = time.Time{}
			continue
		case <-tooLate:
			stop()
			w.missIfUntaken(ctx, wt, pending, c.waiting())
			pending = time.Time{}
			continue
		case <-timer.C:
			stop()
		}
		switch {
		case !c.busy():
			capture(next)
		case w.opts.Fleet.Owns(wt.target.Key):
			if !pending.IsZero() {
				w.missSlot(wt, pending, c.waiting()) // a newer slot takes its place
			}
			pending = next
		}
		next = w.after(next, every, offset)
	}
}

// captureSlot captures a slot of the target when this watcher owns it,
// claims it, and the slot is no later than lateBound; a slot from before
// this watcher watched the target is not its to catch up. The capture is
// stored only if the claim is still this watcher's when it commits.
func (w *Watcher) captureSlot(ctx context.Context, wt *watched, slot time.Time, admitted func()) {
	f, key := w.opts.Fleet, wt.target.Key
	if !f.Owns(key) || slot.Before(wt.since) {
		return
	}
	// Too late is judged before claiming: a claim taken over only to be
	// given up would take the slot from a member whose lease ran out
	// mid-capture (a process stopped, not dead) and whose capture, were
	// it resumed, would still be stored under its claim. A slot captured
	// or in a live watcher's hands is not missed.
	if late := w.opts.now().Sub(slot); late > lateBound(f) {
		if taken, err := f.Taken(ctx, key, slot); err != nil {
			w.log.Error("look up a slot", "target", key, "err", err)
		} else if !taken {
			w.metrics.missed.Inc()
			w.log.Warn("slot missed: later than two lease periods", "target", key,
				"slot", slot.UTC().Format(time.RFC3339Nano), "late", late.Round(time.Millisecond))
		}
		return
	}
	mine, err := f.Claim(ctx, key, slot)
	if err != nil {
		w.log.Error("claim a slot", "target", key, "err", err)
		return
	}
	if !mine {
		return // captured, or being captured, by another watcher
	}
	bg := context.WithoutCancel(ctx)
	o := scheduled(slot)
	o.admitted = admitted
	o.guard = f.Done(key, slot)
	_, res, err := w.capture(ctx, wt, o)
	if errors.Is(err, fleet.ErrClaimLost) {
		return // capture said so
	}
	if err != nil {
		if err := f.Release(bg, key, slot); err != nil {
			w.log.Error("release a slot", "target", key, "err", err)
		}
		return
	}
	w.afterScheduled(ctx, wt, res)
}

// missIfUntaken counts missed a pending slot that became later than
// lateBound while the capture of an earlier one still waits (waiting) or
// runs, unless another watcher took it.
func (w *Watcher) missIfUntaken(ctx context.Context, wt *watched, slot time.Time, waiting bool) {
	if !w.opts.Fleet.Owns(wt.target.Key) || slot.Before(wt.since) {
		return
	}
	switch taken, err := w.opts.Fleet.Taken(ctx, wt.target.Key, slot); {
	case err != nil:
		w.log.Error("look up a slot", "target", wt.target.Key, "err", err)
	case !taken:
		w.missSlot(wt, slot, waiting)
	}
}

// lateBound is how late after its instant a slot may still be captured:
// two lease periods, the time a dead watcher's targets take to move.
func lateBound(f Fleet) time.Duration { return 2 * f.Lease() }

// JoinFleet makes this watcher a member of the fleet of watchers sharing
// st, when st is a shared store, and keeps its lease until leave is
// called; for the embedded store it returns a nil Fleet.
func JoinFleet(ctx context.Context, st store.Store, o fleet.Options) (f Fleet, leave func(), err error) {
	db, ok := st.(fleet.Store)
	if !ok {
		return nil, func() {}, nil
	}
	m, err := fleet.Join(ctx, db.Pool(), o)
	if err != nil {
		return nil, nil, err
	}
	mctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	left := make(chan struct{})
	go func() { m.Run(mctx); close(left) }()
	return member{m}, func() { stop(); <-left }, nil
}

// member is a fleet.Member as a watcher's Fleet: its checks as the
// guards the shared store commits under.
type member struct{ *fleet.Member }

// Done is the guard of fleet.Member.Done for the slot.
func (m member) Done(key string, slot time.Time) shared.Guard {
	return func(ctx context.Context, tx pgx.Tx) error { return m.Member.Done(ctx, tx, key, slot) }
}

// Holds is the guard of fleet.Member.Holds for the target.
func (m member) Holds(key string) shared.Guard {
	return func(ctx context.Context, tx pgx.Tx) error { return m.Member.Holds(ctx, tx, key) }
}
