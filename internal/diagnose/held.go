package diagnose

import (
	"fmt"
	"slices"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
)

// heldByGoroutines runs before the misuse check (check 10): memory that
// goroutines piling up hold is part of their finding, not a leak of its
// own. A goroutine blocked for ever keeps its own struct and everything
// its frames reach: the result it waits to send, the buffer of the write
// it is stuck in. A leak finding whose growing bytes were allocated on
// goroutines that start in the service's function the goroutine
// finding's stacks start in, or are goroutine structs, becomes a symptom
// of the goroutine finding, which takes the worse severity: one thing to
// fix, the blocked goroutine. Of goroutines that start in a library (a
// client's read loops, the server's connections), only their structs are
// folded, a site outside the service's code that a few samples place
// (weaklyPlaced) where half its bytes were allocated on such goroutines
// (the buffers of the connections whose requests pile up), and a site in
// the very function the goroutines wait in, where half its bytes were
// allocated on them, however many samples place it (what a pool's opener
// goroutine allocates while its pools pile up); what else they hold is
// left to the misuse catalogue.
func (d *diagnosis) heldByGoroutines() {
	if len(d.in.Heap) == 0 || len(d.in.Goroutines) == 0 {
		return
	}
	heap, gs := d.in.Heap[len(d.in.Heap)-1].Profile, d.in.Goroutines[len(d.in.Goroutines)-1].Profile
	if heap == nil || gs == nil {
		return
	}
	for g := range d.findings {
		gf := &d.findings[g]
		if d.folded[g] || !goroutineKind(gf.ID) {
			continue
		}
		// With no start in the service's code (a library's goroutines),
		// only the goroutines' own structs are theirs.
		at := site{gf.Function, gf.File, gf.Line}
		starts, anyStarts := d.goroutineStarts(gs, at, false), d.goroutineStarts(gs, at, true)
		for j := range d.findings {
			mf := d.findings[j]
			if j == g || d.folded[j] || mf.ID != "leak.inuse-growth" || mf.Cause != "" || explainedByKnownBug(mf) {
				continue
			}
			on := starts
			if !d.app.is(mf.Function) && (weaklyPlaced(mf) || mf.Function == gf.Function) {
				on = anyStarts
			}
			if !d.allocatedOn(heap, site{mf.Function, mf.File, mf.Line}, on) {
				continue
			}
			d.folded[j] = true
			gf.Symptoms = append(gf.Symptoms, result.Symptom{ID: mf.ID, Severity: mf.Severity, Title: "held by these goroutines: " + mf.Title,
				Function: mf.Function, File: mf.File, Line: mf.Line})
			if SeverityOf(mf) > SeverityOf(*gf) {
				gf.Severity = mf.Severity
			}
		}
	}
}

// maxHeldPerGoroutine is the most live heap a blocked goroutine is taken
// to hold, besides its stack, when growth no sample places rises beside
// goroutines piling up: what it waits with (a request, a waiter's
// record, a closure), not buffers.
const maxHeldPerGoroutine = 16 << 10

// unplacedWithGoroutines runs after heldByGoroutines: a live heap that
// grows steadily where no sample places it (leak.live-growth without a
// site), while goroutines pile up at a pace that puts at most
// maxHeldPerGoroutine of that growth on each, is theirs: a symptom of the
// goroutine finding, which takes the worse severity. Blocked goroutines
// each keep a few hundred bytes — too few, scattered over the sites that
// made them, for the samples of one window to place. Of several goroutine
// findings, the one piling up fastest takes it.
func (d *diagnosis) unplacedWithGoroutines() {
	for j := range d.findings {
		mf := d.findings[j]
		if d.folded[j] || mf.ID != "leak.live-growth" || mf.Function != "" || mf.Cause != "" {
			continue
		}
		slope := mf.Evidence["live_slope_bytes_per_minute"]
		best, pace := -1, 0.0
		for g := range d.findings {
			gf := d.findings[g]
			if d.folded[g] || gf.ID != "leak.goroutine-growth" || SeverityOf(gf) < Medium {
				continue
			}
			if p := gf.Evidence["goroutines_per_minute"]; p > pace {
				best, pace = g, p
			}
		}
		if best < 0 || slope <= 0 || slope/pace > maxHeldPerGoroutine {
			continue
		}
		gf := &d.findings[best]
		d.folded[j] = true
		gf.Symptoms = append(gf.Symptoms, result.Symptom{ID: mf.ID, Severity: mf.Severity,
			Title: fmt.Sprintf("held by these goroutines, about %s each: %s", humanize.Bytes(slope/pace), mf.Title)})
		if SeverityOf(mf) > SeverityOf(*gf) {
			gf.Severity = mf.Severity
		}
	}
}

// goroutineStarts returns the functions of the service's code (of any
// code, with anyCode) that the goroutines through at start in: the
// outermost frame of each stack, a closure or a go statement's wrapper
// (main.handle.func1, main.handle.gowrap1) or a named function.
func (d *diagnosis) goroutineStarts(gs *profile.Profile, at site, anyCode bool) map[string]bool {
	starts := map[string]bool{}
	for _, s := range gs.Sample {
		fs := frames(s)
		if len(fs) == 0 || !slices.ContainsFunc(fs, func(f frame) bool { return f.site() == at }) {
			continue
		}
		outer := fs[len(fs)-1]
		if outer.function == "runtime.goexit" && len(fs) > 1 {
			outer = fs[len(fs)-2]
		}
		if anyCode || d.app.own(outer) {
			starts[outer.function] = true
		}
	}
	return starts
}

// allocatedOn reports whether half or more of the in-use bytes of the
// stacks through at were allocated on goroutines that start in one of
// the functions, or are goroutines' own structs.
func (d *diagnosis) allocatedOn(heap *profile.Profile, at site, starts map[string]bool) bool {
	i := index(heap, pprofx.InuseSpace)
	if i < 0 {
		return false
	}
	var on, total float64
	for _, s := range heap.Sample {
		fs := frames(s)
		if s.Value[i] <= 0 || !slices.ContainsFunc(fs, func(f frame) bool { return f.site() == at }) {
			continue
		}
		v := float64(s.Value[i])
		total += v
		if startsOne(fs, starts) {
			on += v
		}
	}
	return total > 0 && on >= total/2
}

// startsOne reports whether a heap sample's frames ran on a goroutine
// that starts in one of the functions (its outermost frame), or are a
// goroutine's own struct: runtime.malg, whose stack the profile cuts at
// the switch to the system stack, or the go statement of time.goFunc,
// whose only allocation is the goroutine it starts for a time.AfterFunc
// (a context's deadline). The runtime never frees a goroutine's struct
// and reuses those of goroutines that ended: while goroutines pile up,
// every go statement of the process, in the service or not, allocates
// new ones.
func startsOne(fs []frame, starts map[string]bool) bool {
	outer := fs[len(fs)-1]
	if outer.function == "runtime.goexit" && len(fs) > 1 {
		outer = fs[len(fs)-2]
	}
	return starts[outer.function] || fs[0].function == "time.goFunc" ||
		slices.ContainsFunc(fs, func(f frame) bool { return f.function == "runtime.malg" })
}
