package diagnose

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/heapscope/heapscope/internal/humanize"
)

// One profile is enough for some verdicts. A series of snapshots shows
// growth; a single goroutine profile still shows goroutines piling up on
// one wait, and a single CPU profile what allocation and the GC cost.

// Pile-up thresholds: this many goroutines parked on one stack.
const (
	pileUpLow    = 100
	pileUpMedium = 1000
	pileUpHigh   = 10000
)

// goroutinePileUps is the check of a single goroutine profile (or of the
// last of a series too short for the leak check): stacks where many
// goroutines wait on one thing. Idle keep-alive connections of an HTTP
// server or client wait too, by design, and are left out.
func (d *diagnosis) goroutinePileUps() {
	gs := d.in.Goroutines
	if len(gs) == 0 || len(gs) >= d.th.Goroutines.MinSnapshots {
		return
	}
	g := gs[len(gs)-1]
	vi := index(g.Profile, "goroutine")
	if vi < 0 {
		return
	}
	counts := map[string]float64{}
	sites := map[string]site{}
	var total float64
	for _, s := range g.Profile.Sample {
		fs := frames(s)
		if len(fs) == 0 {
			continue
		}
		n := float64(s.Value[vi])
		total += n
		key := stackKey(fs)
		counts[key] += n
		sites[key] = d.goroutineSite(fs)
	}
	keys := make([]string, 0, len(counts))
	for k, n := range counts {
		if n >= pileUpLow && !idleByDesign(k) && blockedIn(k) != "running or runnable" {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	for i, k := range keys {
		if i == d.th.Goroutines.MaxStacks {
			d.note("goroutine pile-ups: %d more stack(s) left out", len(keys)-i)
			break
		}
		n := counts[k]
		sev := Low
		switch {
		case n >= pileUpHigh:
			sev = High
		case n >= pileUpMedium:
			sev = Medium
		}
		at := sites[k]
		title := fmt.Sprintf("%s goroutines %s at %s (%s of %s in one profile)", humanize.Count(n), blockedIn(k), at.where(), humanize.Percent(n/total), humanize.Count(total))
		ev := map[string]float64{"goroutines": n, "total_goroutines": total}
		d.add(newFinding("goroutine.pile-up", sev, at, title, ev, d.pileUpFix(k, at), 0.6))
	}
	if len(keys) > 0 {
		d.note("one goroutine profile shows how many goroutines wait where, not whether they grow: profiles a while apart (heapscope profile) tell a leak from a burst")
	}
}

// pileUpFix is the advice for goroutines piled up on a stack: at the
// service's own wait, a way out of it; inside a library, what the
// service's code must do (close, cancel, drain), never the library's
// internals.
func (d *diagnosis) pileUpFix(stack string, at site) string {
	if d.app.is(at.function) {
		return "these goroutines wait on the same thing: if they should have ended, give the wait a way out — a context with a deadline or cancellation checked in a select, a channel that is closed when the work ends, a buffered channel so a sender does not block when nobody receives; if they are a queue of work, bound it (a worker pool, a semaphore) so a slow dependency cannot pile them up; the stack is " + stackSummary(stack)
	}
	pkg := humanize.ShortFunction(at.function)
	if i := strings.IndexAny(pkg, ".("); i > 0 {
		pkg = pkg[:i]
	}
	return fmt.Sprintf("these goroutines are %s's own, started by its API and waiting inside it: no frame of your code is on their stack. They end when your code ends what started them — close response bodies and clients, cancel the contexts you pass, stop tickers, unsubscribe — so look for the %s call whose result is dropped without that; the stack is %s", pkg, pkg, stackSummary(stack))
}

// idleByDesign reports whether a goroutine stack is an idle keep-alive
// connection of net/http's server or client: those wait for the next
// request or response by design, as many as there are connections.
func idleByDesign(stack string) bool {
	for _, fn := range []string{"net/http.(*conn).serve", "net/http.(*persistConn).readLoop", "net/http.(*persistConn).writeLoop", "net/http.(*connReader).backgroundRead", "net/http.(*http2serverConn).serve", "golang.org/x/net/http2.(*serverConn).serve"} {
		if strings.Contains(stack, fn+" ") {
			return true
		}
	}
	return false
}

// cpuAllocation is the check of a CPU profile without a run's MemStats:
// the share of CPU the allocator and the GC take, and the lines of the
// service's code behind the allocation.
func (d *diagnosis) cpuAllocation() {
	p := d.in.CPU
	if p == nil || d.haveGCCPU {
		return
	}
	vi := index(p, "cpu")
	if vi < 0 {
		return
	}
	var total, alloc, gc float64
	callers := map[site]float64{}
	own := map[site]float64{} // CPU under each line of the service's code
	for _, s := range p.Sample {
		v := float64(s.Value[vi]) / 1e9
		total += v
		fs := frames(s)
		if f, ok := d.app.firstApp(fs); ok {
			own[f.site()] += v
		}
		switch {
		case hasFrame(fs, isGCWork):
			gc += v
		case hasFrame(fs, func(fn string) bool { return fn == "runtime.mallocgc" }):
			alloc += v
			if f, ok := d.app.firstApp(fs); ok {
				callers[f.site()] += v
			}
		}
	}
	if total <= 0 {
		return
	}
	if d.in.Run == nil {
		d.cpuHotSpots(own, total)
	}
	share := (alloc + gc) / total
	sev := Info
	switch {
	case share >= 0.25:
		sev = Medium
	case share >= 0.10:
		sev = Low
	}
	if share < 0.05 {
		d.note("CPU profile: allocation and GC take %s of the CPU it sampled (mallocgc %s, GC work %s): not where the time goes", humanize.Percent(share), humanize.Percent(alloc/total), humanize.Percent(gc/total))
		return
	}
	top := slices.SortedFunc(maps.Keys(callers), func(a, b site) int {
		if c := cmp.Compare(callers[b], callers[a]); c != 0 {
			return c
		}
		return cmp.Compare(a.where(), b.where())
	})
	var lead site
	var parts []string
	for i, at := range top {
		if i == 3 {
			break
		}
		if i == 0 {
			lead = at
		}
		parts = append(parts, fmt.Sprintf("%s under %s", humanize.Percent(callers[at]/total), at.where()))
	}
	title := fmt.Sprintf("allocation and GC take %s of the CPU (runtime.mallocgc %s, GC work %s, over %s sampled)", humanize.Percent(share), humanize.Percent(alloc/total), humanize.Percent(gc/total), humanize.Seconds(total))
	if len(parts) > 0 {
		title += "; allocating most: " + strings.Join(parts, ", ")
	}
	ev := map[string]float64{"alloc_gc_cpu_share": share, "malloc_cpu_share": alloc / total, "gc_cpu_share": gc / total, "cpu_seconds": total}
	fix := "the GC's work grows with the bytes allocated: allocate less at the lines named (reuse buffers, pool per-request objects, preallocate), or give the heap more room (GOGC, GOMEMLIMIT); an allocation profile (heapscope profile, or /debug/pprof/allocs) says which lines allocate the most bytes"
	d.add(newFinding("gc.cpu-profile", sev, lead, title, ev, fix, 0.7))
}

// cpuHotSpots reports, for a CPU profile given alone, the lines of the
// service's code under which a tenth of the CPU or more is spent, up to
// three: where the time goes, beside what allocation costs.
func (d *diagnosis) cpuHotSpots(own map[site]float64, total float64) {
	sites := make([]site, 0, len(own))
	for at, v := range own {
		if v >= 0.1*total {
			sites = append(sites, at)
		}
	}
	slices.SortFunc(sites, func(a, b site) int {
		if c := cmp.Compare(own[b], own[a]); c != 0 {
			return c
		}
		return cmp.Compare(a.where(), b.where())
	})
	for i, at := range sites {
		if i == 3 {
			break
		}
		share := own[at] / total
		sev := Info
		if share >= 0.5 {
			sev = Low
		}
		title := fmt.Sprintf("CPU hot spot at %s: %s of the CPU sampled (%s of %s), in it and what it calls", at.where(), humanize.Percent(share), humanize.Seconds(own[at]), humanize.Seconds(total))
		ev := map[string]float64{"cpu_seconds": own[at], "cpu_share": share}
		d.add(newFinding("cpu.hot-spot", sev, at, title, ev, "where the service's time goes: look at what this line calls in the CPU flame graph (heapscope flame cpu.pb.gz -o cpu.html)", 0.7))
	}
}

// isGCWork reports whether a function is the garbage collector's marking
// or sweeping, on its own workers or as assists.
func isGCWork(fn string) bool {
	switch fn {
	case "runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.gcDrain", "runtime.bgsweep", "runtime.markroot", "runtime.scanobject":
		return true
	}
	return false
}

func hasFrame(fs []frame, match func(string) bool) bool {
	for _, f := range fs {
		if match(f.function) {
			return true
		}
	}
	return false
}
