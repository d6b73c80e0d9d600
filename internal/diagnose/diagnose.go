package diagnose

import (
	"fmt"
	"strconv"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
)

// Run applies every check to what in holds and returns the findings, most
// severe first, and notes on what could not be checked. It does not
// modify in.
func Run(in Input) Report {
	d := newDiagnosis(in)
	d.heapSeries()
	d.goroutineSeries()
	d.goroutinePileUps()
	d.hotSpots()
	d.patterns()
	d.gcPressure()
	d.cpuAllocation()
	d.rssBreakdown()
	d.contention()
	d.regressions()
	d.heldByGoroutines()
	d.unplacedWithGoroutines()
	d.misuses()
	d.userLines()
	d.dropFolded()
	d.attachEscapes()
	d.findings = oneFindingPerCause(d.findings)
	d.findings = oneFindingPerUserLine(d.findings, d.app)
	hidden := 0
	if !in.All {
		d.findings, hidden = hideSmallHotSpots(d.findings, d.th.HotSpot.MinSamples)
		if hidden > 0 {
			d.note("%d small allocation hot spot%s left out (fewer than %.0f samples, or below every low threshold): --all shows them", hidden, plural(hidden), d.th.HotSpot.MinSamples)
		}
	}
	setCauses(d.findings)
	Sort(d.findings)
	if d.findings == nil {
		d.findings = []result.Finding{}
	}
	return Report{Findings: d.findings, Notes: d.notes, HiddenHotSpots: hidden}
}

// diagnosis is one Run: its input, the figures derived once for every
// check, and what the checks found.
type diagnosis struct {
	in  Input
	th  Thresholds
	app appCode

	// window is the length of the window in seconds (0 when unknown);
	// requests the requests completed in it (0 without load).
	window   float64
	requests float64
	// allocs is the window's allocation profile; allocBytes and
	// allocObjects its totals.
	allocs                   *profile.Profile
	allocBytes, allocObjects float64
	// allocsSinceStart: allocs is one heap profile's counts since the
	// process started, not a window's.
	allocsSinceStart bool
	// gcCPU is the GC's share of the process's CPU and gcCPUWindow
	// whether it covers the window (else the process's lifetime);
	// procs is GOMAXPROCS when known.
	gcCPU       float64
	gcCPUWindow bool
	haveGCCPU   bool
	procs       float64

	// oneProcess is false when the heap snapshots cannot come from one
	// process.
	oneProcess bool
	// folded are the indices of findings listed under another's (see
	// foldLeaksInto), removed before the report.
	folded map[int]bool
	// holds lists, by the site of a leak finding that names a container
	// holding the growth (liveHeap, live.go), the sites whose objects it keeps.
	holds map[site][]site
	// growingStacks are the heap's stacks with their in-use bytes in the
	// first and the last snapshot (heapSites), once the leak check read
	// them.
	growingStacks []*series
	// stacks hashes the heap profiles' stacks for the checks that
	// compare them across snapshots.
	stacks *stackHasher
	// declared caches whether a source file declares a receiver of a
	// type (declares), by file, receiver and type.
	declared map[string]bool

	findings []result.Finding
	notes    []string
}

func newDiagnosis(in Input) *diagnosis {
	d := &diagnosis{in: in, oneProcess: true, folded: map[int]bool{}, holds: map[site][]site{}, stacks: newStackHasher()}
	d.loadHeapOnce()
	in = d.in
	if in.Thresholds != nil {
		d.th = *in.Thresholds
	} else {
		d.th = DefaultThresholds()
	}
	if r := in.Run; r != nil {
		d.app.mainModule = r.Target.MainModule
		d.window = r.Window.DurationSeconds
		if r.Load != nil {
			d.requests = float64(r.Load.Completed)
		}
		if r.PerRequest != nil && r.PerRequest.Requests > 0 {
			d.requests = float64(r.PerRequest.Requests)
		}
		ms := r.MemStats
		if ms.GCCPUFractionScope != "" {
			d.gcCPU, d.gcCPUWindow, d.haveGCCPU = ms.GCCPUFraction, ms.GCCPUFractionScope == "window", true
		}
		if n, err := strconv.Atoi(r.Target.Env["GOMAXPROCS"]); err == nil && n > 0 {
			d.procs = float64(n)
		}
	}
	if d.window <= 0 && len(in.Heap) > 1 {
		d.window = in.Heap[len(in.Heap)-1].Time.Sub(in.Heap[0].Time).Seconds()
	}
	d.checkOneProcess()
	d.allocs = in.Allocs
	if first, last := firstLast(in.Heap); d.allocs == nil && len(in.Heap) > 1 && d.oneProcess && first != nil && last != nil {
		delta, err := pprofx.AllocDelta(first, last)
		if err != nil {
			d.note("allocations over the window: %v", err)
		} else {
			d.allocs = delta
		}
	}
	if d.allocs == nil && len(in.Heap) == 1 && index(in.Heap[0].Profile, pprofx.AllocSpace) >= 0 {
		// One profile: what it counts since the process started still
		// names the sites and their shares, without rates.
		d.allocs, d.allocsSinceStart = in.Heap[0].Profile, true
		d.note("one heap profile: allocations are counted since the process started, so sites are rated by their share of the bytes; a second snapshot a while later (heapscope profile, or two files) adds rates, allocations per request, and whether the live heap grows")
	}
	if d.allocs != nil {
		if d.window <= 0 && d.allocs.DurationNanos > 0 {
			d.window = float64(d.allocs.DurationNanos) / 1e9
		}
		d.allocBytes, d.allocObjects = sums(d.allocs, pprofx.AllocSpace), sums(d.allocs, pprofx.AllocObjects)
	}
	return d
}

// firstLast returns the parsed profiles of the first and the last of a
// series, nil where only their stacks were read.
func firstLast(ps []Profile) (first, last *profile.Profile) {
	if len(ps) == 0 {
		return nil, nil
	}
	return ps[0].Profile, ps[len(ps)-1].Profile
}

// dropFolded removes the findings listed under another's.
func (d *diagnosis) dropFolded() {
	if len(d.folded) == 0 {
		return
	}
	kept := d.findings[:0]
	for i, f := range d.findings {
		if !d.folded[i] {
			kept = append(kept, f)
		}
	}
	d.findings = kept
}

func (d *diagnosis) note(format string, args ...any) {
	d.notes = append(d.notes, fmt.Sprintf(format, args...))
}

func (d *diagnosis) add(f result.Finding) { d.findings = append(d.findings, f) }

// checkOneProcess looks for heap snapshots that cannot follow each other
// in one process: pprof carries no process id, but alloc_* are cumulative
// since the process started, so they never go down, and snapshots of one
// series are taken one after the other.
func (d *diagnosis) checkOneProcess() {
	heap, read := d.in.Heap, d.in.heap
	if read == nil {
		return
	}
	for i := 1; i < len(heap); i++ {
		a, b := heap[i-1], heap[i]
		if !b.Time.IsZero() && !a.Time.IsZero() && !b.Time.After(a.Time) {
			d.oneProcess = false
			d.note("heap snapshots %s and %s were taken at the same time or out of order (%s, %s): they are not a series of one process; growth and window checks skipped",
				a.Name, b.Name, a.Time.UTC().Format("15:04:05.000"), b.Time.UTC().Format("15:04:05.000"))
			return
		}
		x, y := read.snaps[i-1], read.snaps[i]
		for _, c := range []struct {
			st   string
			x, y float64
		}{{pprofx.AllocSpace, x.allocBytes, y.allocBytes}, {pprofx.AllocObjects, x.allocObjects, y.allocObjects}} {
			if c.y < c.x {
				d.oneProcess = false
				d.note("heap snapshots %s and %s cannot come from one process: cumulative %s went down from %.0f to %.0f (a restart between them, or two processes); growth and window checks skipped",
					a.Name, b.Name, c.st, c.x, c.y)
				return
			}
		}
	}
}

// sums returns the total of a sample type over a profile; 0 when the
// profile lacks it.
func sums(p *profile.Profile, sampleType string) float64 {
	if p == nil {
		return 0
	}
	i := -1
	for j, st := range p.SampleType {
		if st.Type == sampleType {
			i = j
		}
	}
	if i < 0 {
		return 0
	}
	var sum int64
	for _, s := range p.Sample {
		if i < len(s.Value) {
			sum += s.Value[i]
		}
	}
	return float64(sum)
}

// index returns the index of a sample type in p, or -1.
func index(p *profile.Profile, sampleType string) int {
	if p == nil {
		return -1
	}
	for i, st := range p.SampleType {
		if st.Type == sampleType {
			return i
		}
	}
	return -1
}

// attachEscapes adds the compiler's explanations to every finding at a
// source line, when the escape analysis is at hand.
func (d *diagnosis) attachEscapes() {
	if d.in.Escapes != nil {
		AttachEscapes(d.findings, d.in.Escapes)
	}
}

// AttachEscapes sets the Escape field of every finding at a source line
// that the escape analysis explains. Callers that analyse only the
// packages of the findings (see escape.Patterns) diagnose first, then
// attach.
func AttachEscapes(findings []result.Finding, e Escapes) {
	for i := range findings {
		f := &findings[i]
		if f.File == "" || f.Line <= 0 {
			continue
		}
		if why := e.At(f.File, int(f.Line)); len(why) > 0 {
			f.Escape = why
		}
	}
}

// sourceLine reads a line through the input's SourceReader.
func (d *diagnosis) sourceLine(s site) (string, bool) {
	if d.in.Source == nil || s.file == "" || s.line <= 0 {
		return "", false
	}
	return d.in.Source.Line(s.file, s.line)
}
