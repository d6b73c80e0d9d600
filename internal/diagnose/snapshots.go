package diagnose

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/pprofx"
)

// A series of heap snapshots is read by stack, not by sample, and one
// snapshot at a time: ReadStacks decodes a profile many times faster than
// profile.Parse, and what the checks keep of each snapshot is its time,
// its totals and its in-use bytes per site (the frames named once across
// the series). So a hundred large snapshots are read in seconds, in the
// memory of a few. The snapshots that need more are parsed whole: the
// first and the last (which stacks grow at a site, the allocation delta)
// and the first under load (the per-sample object sizes, holder.go).

// heapSeries is what the checks keep of a series of heap snapshots, in
// time order, beside Input.Heap in the same order.
type heapSeries struct {
	frames *frameIndex
	snaps  []heapSnapshot
}

// heapSnapshot is one snapshot of a series: its time, its allocation
// totals (the profiler's own samples left out), its sampling period and
// its in-use bytes per site.
type heapSnapshot struct {
	time                     time.Time
	allocBytes, allocObjects float64
	period                   int64
	inuse                    bool // it has inuse_space
	points                   []sitePoint
}

// sitePoint is one site's in-use bytes in a snapshot.
type sitePoint struct {
	frame int32 // the site's frame id in the series' frameIndex
	bytes float64
	// samples estimates the samples behind bytes (rawSamples), when the
	// snapshot has inuse_objects; -1 when it has not.
	samples float64
}

// HeapSeries collects heap snapshots read by stack, in any order and
// from several goroutines at once, into what the checks keep of each:
// its time, totals and in-use bytes per site. A reader that decodes a
// long series in parallel adds each snapshot as soon as it is decoded
// and drops it, so the series is never held whole; Input.UseHeap then
// puts it in order.
type HeapSeries struct {
	mu      sync.Mutex
	frames  *frameIndex
	snaps   []heapSnapshot
	entries []Profile
	added   []bool
	// at is scratch space: per frame id, the index of its point in the
	// snapshot being folded, plus one.
	at []int32
	// kept holds the stacks of the snapshots that may end up first or
	// last of the series — the first and last slots, the earliest and
	// latest so far — which the checks read whole (UseHeap).
	kept             map[int]*pprofx.Stacks
	earliest, latest int
}

// NewHeapSeries returns a HeapSeries with slots for n snapshots.
func NewHeapSeries(n int) *HeapSeries {
	return &HeapSeries{frames: newFrameIndex(), snaps: make([]heapSnapshot, n), entries: make([]Profile, n), added: make([]bool, n),
		kept: map[int]*pprofx.Stacks{}, earliest: -1, latest: -1}
}

// Add adds the snapshot p, read by stack, in the given slot. p names it,
// gives its time (zero: the profile's own) and its Profile or Open
// function, through which the checks parse it whole where they need to.
// It is safe for concurrent use.
func (h *HeapSeries) Add(slot int, p Profile, st *pprofx.Stacks) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fold(slot, st)
	if p.Time.IsZero() && st.TimeNanos > 0 {
		h.snaps[slot].time = time.Unix(0, st.TimeNanos)
	} else {
		h.snaps[slot].time = p.Time
	}
	h.entries[slot], h.added[slot] = p, true
	h.keep(slot, st)
}

// keep keeps the stacks of a snapshot that may be first or last.
func (h *HeapSeries) keep(slot int, st *pprofx.Stacks) {
	t := h.snaps[slot].time
	if h.earliest < 0 || t.Before(h.snaps[h.earliest].time) {
		old := h.earliest
		h.earliest = slot
		h.release(old)
	}
	if h.latest < 0 || t.After(h.snaps[h.latest].time) {
		old := h.latest
		h.latest = slot
		h.release(old)
	}
	if slot == 0 || slot == len(h.snaps)-1 || slot == h.earliest || slot == h.latest {
		h.kept[slot] = st
	}
}

// release drops the kept stacks of a slot no longer a candidate.
func (h *HeapSeries) release(slot int) {
	if slot >= 0 && slot != 0 && slot != len(h.snaps)-1 && slot != h.earliest && slot != h.latest {
		delete(h.kept, slot)
	}
}

// UseHeap makes the series the input's heap snapshots (Heap): in the
// order of its slots, or, when some snapshot came without a Time, in the
// order of the snapshots' own timestamps (Live follows the same order).
// Then it parses, through their Open functions, the snapshots the checks
// read whole: the first, the one at FirstUnderLoad and the last. Its
// error names a snapshot that cannot be parsed.
func (in *Input) UseHeap(h *HeapSeries) error {
	var heap []Profile
	var snaps []heapSnapshot
	var kept []*pprofx.Stacks
	zeroTime := false
	for i, ok := range h.added {
		if ok {
			heap = append(heap, h.entries[i])
			snaps = append(snaps, h.snaps[i])
			kept = append(kept, h.kept[i])
			zeroTime = zeroTime || h.entries[i].Time.IsZero()
		}
	}
	// A series whose times the caller gave is in the caller's order (the
	// checks say when it is not a series); one whose times come from the
	// profiles themselves is put in their order.
	order := make([]int, len(snaps))
	for i := range order {
		order[i] = i
	}
	if zeroTime {
		slices.SortStableFunc(order, func(a, b int) int { return snaps[a].time.Compare(snaps[b].time) })
	}
	in.Heap = make([]Profile, len(order))
	series := &heapSeries{frames: h.frames, snaps: make([]heapSnapshot, len(order))}
	live := len(in.Live) == len(order)
	var lives []Live
	keptAt := make([]*pprofx.Stacks, len(order))
	for to, from := range order {
		in.Heap[to], series.snaps[to], keptAt[to] = heap[from], snaps[from], kept[from]
		if in.Heap[to].Time.IsZero() {
			in.Heap[to].Time = snaps[from].time
		}
		if live {
			lives = append(lives, in.Live[from])
		}
	}
	if live {
		in.Live = lives
	}
	// The few parsed whole, at once.
	var wg sync.WaitGroup
	errs := make([]error, len(in.Heap))
	for _, i := range slices.Compact([]int{0, in.FirstUnderLoad, len(in.Heap) - 1}) {
		if i < 0 || i >= len(in.Heap) || in.Heap[i].Profile != nil || in.Heap[i].Open == nil {
			continue
		}
		wg.Go(func() {
			var p *profile.Profile
			if st := keptAt[i]; st != nil {
				// Read already, sample by sample (ReadOptions.Unmerged).
				p = st.Profile()
			} else {
				var err error
				if p, err = parseOpened(in.Heap[i]); err != nil {
					errs[i] = err
					return
				}
			}
			in.Heap[i].Profile, _ = pprofx.WithoutProfiler(p)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	in.heap = series
	return nil
}

// LoadHeap reads the input's heap snapshots by stack, several at once
// (through Open where a snapshot has no Profile), and makes them its
// series (UseHeap). Run does it when its caller has not.
func (in *Input) LoadHeap() error {
	h := NewHeapSeries(len(in.Heap))
	heap := in.Heap
	errs := make([]error, len(heap))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(heap)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(heap) {
					return
				}
				st, err := stacksOf(heap[i])
				if err != nil {
					errs[i] = err
					continue
				}
				h.Add(i, heap[i], st)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return in.UseHeap(h)
}

// stacksOf reads a snapshot by stack: through Open, or by aggregating its
// parsed profile.
func stacksOf(p Profile) (*pprofx.Stacks, error) {
	if p.Profile != nil {
		return pprofx.StacksOf(p.Profile)
	}
	if p.Open == nil {
		return nil, fmt.Errorf("heap snapshot %s: no profile and no file to read it from", p.Name)
	}
	r, err := p.Open()
	if err != nil {
		return nil, fmt.Errorf("read profile: %w", err)
	}
	defer r.Close()
	// Within what Parse would decode: the first and last snapshots
	// become profiles (UseHeap).
	s, err := pprofx.ReadStacks(r, pprofx.ReadOptions{Unmerged: true, MaxDecoded: pprofx.DefaultMaxDecoded})
	if err != nil {
		return nil, fmt.Errorf("read profile %s: %w", p.Name, err)
	}
	return s, nil
}

// parseOpened parses a snapshot whole through its Open function.
func parseOpened(p Profile) (*profile.Profile, error) {
	r, err := p.Open()
	if err != nil {
		return nil, fmt.Errorf("read profile: %w", err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, pprofx.DefaultMaxDecompressed+1))
	if err != nil {
		return nil, fmt.Errorf("read profile %s: %w", p.Name, err)
	}
	parsed, err := pprofx.Parse(data, pprofx.DefaultMaxDecompressed)
	if err != nil {
		return nil, fmt.Errorf("read profile %s: %w", p.Name, err)
	}
	return parsed, nil
}

// fold adds snapshot i, read by stack, to the series.
func (h *HeapSeries) fold(i int, st *pprofx.Stacks) {
	snap := &h.snaps[i]
	snap.period = st.Period
	vi, oi := typeIndex(st, pprofx.InuseSpace), typeIndex(st, pprofx.InuseObjects)
	ai, aoi := typeIndex(st, pprofx.AllocSpace), typeIndex(st, pprofx.AllocObjects)
	snap.inuse = vi >= 0
	view := h.frames.view(st)
	h.at = slices.Grow(h.at[:0], len(h.frames.list))[:len(h.frames.list)]
	clear(h.at)
	for k := range st.Len() {
		f, ok := view.siteOf(st.Stack(k))
		if !ok {
			continue // empty, or the profiler's own
		}
		vals := st.Values(k)
		if ai >= 0 {
			snap.allocBytes += float64(vals[ai])
		}
		if aoi >= 0 {
			snap.allocObjects += float64(vals[aoi])
		}
		if vi < 0 || vals[vi] == 0 {
			continue
		}
		samples := -1.0
		if oi >= 0 {
			samples = rawSamples(vals[oi], vals[vi], st.Period)
		}
		if j := h.at[f]; j > 0 {
			pt := &snap.points[j-1]
			pt.bytes += float64(vals[vi])
			if samples >= 0 {
				pt.samples += samples
			}
			continue
		}
		snap.points = append(snap.points, sitePoint{frame: f, bytes: float64(vals[vi]), samples: samples})
		h.at[f] = int32(len(snap.points))
	}
}

// frameIndex gives every frame (function, file, line) of a series a
// dense id.
type frameIndex struct {
	ids  map[frame]int32
	list []frame
}

func newFrameIndex() *frameIndex { return &frameIndex{ids: map[frame]int32{}} }

func (x *frameIndex) id(f frame) int32 {
	id, ok := x.ids[f]
	if !ok {
		id = int32(len(x.list))
		x.ids[f] = id
		x.list = append(x.list, f)
	}
	return id
}

// snapshotView is one snapshot's locations seen through the index: per
// location, the frame id of its first line outside the runtime (-1 when
// all are the runtime's), of its first line, and whether it runs through
// the profiler.
type snapshotView struct {
	site, first []int32
	profiler    []bool
}

func (x *frameIndex) view(s *pprofx.Stacks) snapshotView {
	n := len(s.Locations)
	v := snapshotView{site: make([]int32, n), first: make([]int32, n), profiler: make([]bool, n)}
	for i, loc := range s.Locations {
		v.site[i], v.first[i] = -1, -1
		if len(loc.Lines) == 0 {
			v.first[i] = x.id(frame{function: s.FunctionName(int32(i), 0)})
		}
		for _, ln := range loc.Lines {
			f := frame{line: ln.Line}
			if ln.Function >= 0 {
				fn := s.Functions[ln.Function]
				f.function, f.file = fn.Name, fn.File
			}
			id := x.id(f)
			if v.first[i] < 0 {
				v.first[i] = id
			}
			if v.site[i] < 0 && !isRuntime(f.function) {
				v.site[i] = id
			}
			v.profiler[i] = v.profiler[i] || pprofx.IsProfilerFunction(f.function)
		}
	}
	return v
}

// siteOf returns the frame id of the site of a stack (locations innermost
// first): its first frame outside the runtime, else its first frame, as
// frames and heapSites choose it. ok is false for an empty stack or one
// through the profiler.
func (v snapshotView) siteOf(locs []int32) (int32, bool) {
	site := int32(-1)
	for _, l := range locs {
		if v.profiler[l] {
			return 0, false
		}
		if site < 0 {
			site = v.site[l]
		}
	}
	if site < 0 && len(locs) > 0 {
		site = v.first[locs[0]]
	}
	return site, site >= 0
}

// typeIndex returns the index of a sample type in s, or -1.
func typeIndex(s *pprofx.Stacks, sampleType string) int {
	for i, st := range s.SampleTypes {
		if st.Type == sampleType {
			return i
		}
	}
	return -1
}

// loadHeapOnce loads the input's heap series unless its caller did
// (Input.LoadHeap): a snapshot that cannot be read is then said in a note,
// and the heap checks are skipped.
func (d *diagnosis) loadHeapOnce() {
	if d.in.heap != nil || len(d.in.Heap) == 0 {
		return
	}
	in := d.in
	if err := in.LoadHeap(); err != nil {
		d.note("heap snapshots: %v", err)
		d.in.Heap = nil
		return
	}
	d.in = in
}
