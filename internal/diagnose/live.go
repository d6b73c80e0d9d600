package diagnose

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/heapscope/heapscope/internal/humanize"
)

// Exact figures decide, samples attribute. A heap profile's values are
// estimates from samples, one per MemProfileRate bytes (512 KiB by
// default), so a leak of a few MiB over a window moves a site by a handful
// of samples: too few to tell growth from chance. MemStats read right
// after a forced GC are exact: HeapAlloc is the live heap. So the live
// series says whether the heap grows, steadily or not; the profiles say
// where, each site's share given with the uncertainty its sample count
// implies (a Poisson count of n samples is n ± √n).

// liveAnalysis is the exact live heap's verdict and, when it grows, the
// sites the samples place the growth at, largest first.
type liveAnalysis struct {
	// ys is the live heap of every snapshot; from is the first that the
	// trend t is fitted from (FirstUnderLoad), and meetLoad how much the
	// heap grew before it.
	ys       []float64
	from     int
	meetLoad float64
	t        trend
	v        verdict
	floor    float64
	places   []place
	// placed is the growth of every place together.
	placed float64
}

// place is a site whose sampled in-use bytes rose across the snapshots.
type place struct {
	s *series
	// n is the samples gained from the first snapshot to the last,
	// growth the bytes gained as the samples estimate them, plusMin the
	// estimate's uncertainty (growth/√n).
	n, growth, plusMin float64
}

// analyseLive reads the live series of d's input; false when the input
// has no live figure for every heap snapshot.
func (d *diagnosis) analyseLive(hs heapSites) (liveAnalysis, bool) {
	live := d.in.Live
	if len(live) != len(d.in.Heap) || len(live) == 0 {
		return liveAnalysis{}, false
	}
	a := liveAnalysis{ys: make([]float64, len(live))}
	on := make([]bool, len(live))
	for i, l := range live {
		if l.Bytes == 0 {
			return liveAnalysis{}, false
		}
		a.ys[i], on[i] = float64(l.Bytes), l.Profiling
	}
	a.ys = withoutProfilerSteps(hs.xs, a.ys, on)
	th := d.th.Leak
	if f := d.in.FirstUnderLoad; f > 0 && len(a.ys)-f >= th.MinSnapshots {
		a.from, a.meetLoad = f, a.ys[f]-a.ys[0]
	}
	xs, ys := hs.xs[a.from:], a.ys[a.from:]
	a.t = fitTrend(xs, ys)
	a.floor = max(th.MinLiveGrowthBytes, th.MinLiveGrowthShare*ys[0])
	a.v = th.classifyLive(a.t, xs, a.floor)
	if a.v != steady {
		return a, true
	}
	for at, s := range hs.sites {
		cnt := hs.samples[at]
		if cnt == nil {
			continue
		}
		n := cnt[len(cnt)-1] - cnt[a.from]
		g := s.ys[len(s.ys)-1] - s.ys[a.from]
		if slope, _ := FitLine(xs, s.ys[a.from:]); slope <= 0 || g <= 0 || n < 0.5 {
			continue
		}
		a.places = append(a.places, place{s: s, n: n, growth: g, plusMin: g / math.Sqrt(n)})
		a.placed += g
	}
	slices.SortFunc(a.places, func(x, y place) int {
		if c := cmp.Compare(y.growth, x.growth); c != 0 {
			return c
		}
		return cmp.Compare(x.s.at.where(), y.s.at.where())
	})
	return a, true
}

// others returns the places that are neither the holder nor held by it.
func (a liveAnalysis) others(h holder) []place {
	grouped := map[site]bool{h.p.s.at: true}
	for _, q := range h.held {
		grouped[q.s.at] = true
	}
	var out []place
	for _, p := range a.places {
		if !grouped[p.s.at] {
			out = append(out, p)
		}
	}
	return out
}

// withoutProfilerSteps takes out of a live heap series the steps where
// the profiler's state changes (on: its buffers held, a CPU profile
// running): across such a step the heap is taken to grow as it does
// between the snapshots around it in one state (the median pace of
// those steps), and the rest is the profiler's, removed from every
// snapshot after the step. ys is not modified.
func withoutProfilerSteps(xs, ys []float64, on []bool) []float64 {
	var paces []float64
	changes := false
	for i := 1; i < len(ys); i++ {
		switch {
		case on[i] != on[i-1]:
			changes = true
		case xs[i] > xs[i-1]:
			paces = append(paces, (ys[i]-ys[i-1])/(xs[i]-xs[i-1]))
		}
	}
	if !changes || len(paces) == 0 {
		return ys
	}
	slices.Sort(paces)
	pace := paces[len(paces)/2]
	if len(paces)%2 == 0 {
		pace = (paces[len(paces)/2-1] + paces[len(paces)/2]) / 2
	}
	out := make([]float64, len(ys))
	out[0] = ys[0]
	shift := 0.0
	for i := 1; i < len(ys); i++ {
		if on[i] != on[i-1] {
			// The profiler adds its buffers as it starts and frees them as
			// it ends, never more than maxProfilerStep: what is beyond
			// is the service's (a pool filling as the load began with
			// the window).
			step := ys[i] - ys[i-1] - pace*(xs[i]-xs[i-1])
			if on[i] {
				step = min(max(step, 0), maxProfilerStep)
			} else {
				step = max(min(step, 0), -maxProfilerStep)
			}
			shift += step
		}
		out[i] = ys[i] - shift
	}
	return out
}

// maxProfilerStep bounds what the profiler's own buffers add to a live
// heap: a CPU profile's are about 1 MiB.
const maxProfilerStep = 2 << 20

// classifyLive says what a live heap series is. Unlike a site's sampled
// series, the whole heap of a leaking service often grows more slowly as
// the window goes on (fewer new keys, a map between doublings) without
// ever stopping: growth is steady while the series' later half still
// rises by half the floor or more, and warm-up is growth that stopped. A
// series that rises at every step is steady even when a doubling makes
// its line fit loosely.
func (th LeakThresholds) classifyLive(t trend, xs []float64, floor float64) verdict {
	h := len(xs) / 2
	late := t.lateSlope * (xs[len(xs)-1] - xs[h])
	// Warm-up is growth that stopped: the later half rises little, and
	// far more slowly than the first did. A short window of a slow leak
	// rises little in its later half too, at the same pace.
	early := 0.0
	if span := xs[h] - xs[0]; span > 0 {
		early = (t.growth - late) / span
	}
	slowed := t.lateSlope*3 < early
	switch {
	case t.n < th.MinSnapshots:
		return tooShort
	case t.span < floor:
		return flat
	case t.rising < th.MinRisingSteps && t.maxDrop >= t.span/2 && t.maxRise >= t.span/2:
		// Rises and falls back by half its range or more: a cache
		// that evicts, a pool, batches.
		return sawtooth
	case t.growth >= floor && late < floor/2 && slowed:
		return warmUp
	case t.slope > 0 && t.growth >= floor && t.rising >= th.MinRisingSteps && t.r2 >= th.MinR2:
		return steady
	case t.slope > 0 && t.growth >= floor && t.rising == 1 && late >= floor/2:
		// Up at every step and still rising late: a map or slice that
		// grows in doublings steps unevenly, and its line fits loosely,
		// but an exact heap that never once went down is not noise.
		return steady
	case t.r2 < th.MinR2:
		return noise
	default:
		return flat
	}
}

// MinPlacingSamples is how many samples of growth place a leak at a site:
// with 4, the estimate is within about ±50 %.
const MinPlacingSamples = 4

// placedSurely reports whether the samples place the growth: its largest site
// has gained MinPlacingSamples samples or more.
func (a liveAnalysis) placedSurely() bool {
	return len(a.places) > 0 && a.places[0].n >= MinPlacingSamples
}

// Placement is what the exact live heap says of a series of snapshots so
// far: whether it grows steadily, and whether the samples place that
// growth yet — at one site, or at a holder and the sites it holds. A collector asks it to decide whether to keep sampling.
type Placement struct {
	// Grows is true when the live heap grows steadily.
	Grows bool
	// Placed is true when the samples place the growth surely enough.
	Placed bool
	// Samples counts the samples of growth at the leading site.
	Samples float64
}

// Place judges the heap snapshots and live heap of in, as the leak check
// does. Without a live figure for each snapshot it says nothing grows.
func Place(in Input) Placement {
	d := newDiagnosis(in)
	hs, ok := d.heapSites()
	if !ok {
		return Placement{}
	}
	a, ok := d.analyseLive(hs)
	if !ok || a.v != steady {
		return Placement{}
	}
	p := Placement{Grows: true, Placed: a.placedSurely()}
	if len(a.places) > 0 {
		p.Samples = a.places[0].n
	}
	if h, ok := d.findHolder(a.places, hs, a.from); ok {
		// The holder and what it holds are one finding: their samples
		// together place it.
		n := h.p.n + sumSamples(h.held)
		p.Samples = max(p.Samples, n)
		p.Placed = p.Placed || n >= MinPlacingSamples
	}
	return p
}

// liveHeap decides on the exact live heap series and attributes its
// growth to the sampled sites. It returns false when the input has no
// live figure for every heap snapshot, leaving the decision to the
// samples alone.
func (d *diagnosis) liveHeap(hs heapSites) bool {
	a, ok := d.analyseLive(hs)
	if !ok {
		return false
	}
	th := d.th.Leak
	ys, t := a.ys[a.from:], a.t
	window := (hs.xs[len(hs.xs)-1] - hs.xs[a.from]) * 60
	if a.from > 0 && a.meetLoad > 0 {
		d.note("leak check: the live heap grew by %s as the load began (%s before it, %s with it): the service meeting the load, pools, caches and connections filling; the leak check reads the %d snapshots under the load",
			humanize.Bytes(a.meetLoad), humanize.Bytes(a.ys[0]), humanize.Bytes(a.ys[a.from]), len(ys))
	}
	switch a.v {
	case steady:
	case warmUp:
		d.boundedGrowth(site{}, "the live heap (exact, HeapAlloc after each forced GC)", ys, t)
		return true
	default:
		d.note("leak check: the live heap (exact, MemStats after each forced GC) does not grow steadily over %s: %s (%s; it takes a steady rise of at least %s)",
			humanize.Seconds(window), liveSeries(ys), a.v, humanize.Bytes(a.floor))
		return true
	}

	ev := map[string]float64{
		"live_slope_bytes_per_minute": t.slope,
		"live_r2":                     t.r2,
		"live_growth_bytes":           t.growth,
		"live_first_bytes":            ys[0],
		"live_last_bytes":             ys[len(ys)-1],
		"snapshots":                   float64(len(ys)),
		"window_seconds":              window,
		"sample_period_bytes":         float64(hs.period),
	}
	sev, projection := d.leakSeverity(t.slope, ys[len(ys)-1], ev)
	if d.requests > 0 {
		ev["live_bytes_per_request"] = t.growth / d.requests
	}
	growsBy := fmt.Sprintf("the live heap grows %s/min (exact, HeapAlloc after each forced GC: %s, R² %.2f)%s",
		humanize.Bytes(t.slope), liveSeries(ys), t.r2, projection)

	if len(a.places) == 0 {
		d.add(newFinding("leak.live-growth", sev, site{}, growsBy+unplacedTitle, ev,
			unplacedFix(t.growth, window, hs.period), t.confidence()*0.8))
		return true
	}
	places, lead := a.places, 0
	if h, ok := d.findHolder(a.places, hs, a.from); ok {
		d.add(d.holderFinding(h, sev, growsBy, ev, hs.period, t.confidence()))
		for _, q := range h.held {
			d.holds[h.p.s.at] = append(d.holds[h.p.s.at], q.s.at)
		}
		places, lead = a.others(h), 1
	}
	for j, p := range places {
		i := j + lead
		if i > 0 && p.n < MinPlacingSamples {
			// Beside the lead, a site with a sample or two is chance.
			d.note("leak check: %d more site(s) whose sampled in-use bytes rose by fewer than %d samples each, too few to place growth there", len(places)-j, MinPlacingSamples)
			break
		}
		if i == th.MaxSites {
			d.note("leak check: %d more site(s) whose sampled in-use bytes rose left out", len(places)-j)
			break
		}
		pev := maps.Clone(ev)
		pev["site_growth_bytes"] = p.growth
		pev["site_growth_uncertainty_bytes"] = p.plusMin
		pev["site_samples"] = p.n
		pev["site_share_of_sampled_growth"] = p.growth / a.placed
		title := fmt.Sprintf("at %s %s; ≈ %s ± %s of it there (%s at %s)", p.s.at.where(), growsBy,
			humanize.Bytes(p.growth), humanize.Bytes(p.plusMin), samplesWord(p.n), humanize.Bytes(float64(hs.period)))
		// Confidence: that the heap grows (the exact fit) and that this
		// site is where (its samples).
		conf := t.confidence() * (1 - 1/math.Sqrt(1+p.n))
		siteSev := sev
		if i > 0 {
			// Secondary sites share the growth: rate them by their own
			// part of it.
			siteSev = min(sev, th.SlopeBytesPerMinute.of(t.slope*p.growth/a.placed))
		}
		fix := d.outsideFix(hs, p.s.at)
		if fix == "" {
			fix = "memory allocated here stays reachable and keeps growing: find what holds it (a map, a slice or a cache that is only ever added to) and bound it — evict (LRU, TTL), cap its size, or delete entries when done"
		}
		if p.n < MinPlacingSamples {
			fix += "; " + fewSamplesAdvice(t.growth, window, hs.period)
		}
		f := newFinding("leak.inuse-growth", siteSev, p.s.at, title, pev, fix, conf)
		d.asMapLeak(&f, p.s.at)
		d.add(f)
	}
	return true
}

// leakSeverity rates a live heap growing slope bytes a minute from last
// bytes: by its pace, and by the time until it reaches the container's
// limit, GOMEMLIMIT, or else twice its size. It adds the projection to ev
// and returns it in words.
func (d *diagnosis) leakSeverity(slope, last float64, ev map[string]float64) (Severity, string) {
	th := d.th.Leak
	sev := th.SlopeBytesPerMinute.of(slope)
	headroom, limitName := d.headroom()
	if headroom > 0 {
		hours := headroom / slope / 60
		ev["hours_to_limit"] = hours
		ev["limit_headroom_bytes"] = headroom
		sev = max(sev, levelWithin(hours, th.HighWithinHours, th.MediumWithinHours))
		return sev, fmt.Sprintf("; at this pace it reaches the %s in %s", limitName, humanize.Hours(hours))
	}
	// No limit known: the time to double. A heap that doubles within a
	// day needs a limit it will hit.
	hours := last / slope / 60
	ev["hours_to_double"] = hours
	if hours <= th.HighWithinHours {
		sev = max(sev, Medium)
	}
	return sev, fmt.Sprintf("; at this pace it doubles in %s", humanize.Hours(hours))
}

// liveSeries shows a live heap series: "1.0 MiB → 3.5 MiB → 6.3 MiB".
func liveSeries(ys []float64) string {
	s := ""
	for i, y := range ys {
		if i > 0 {
			s += " → "
		}
		s += humanize.Bytes(y)
	}
	return s
}

func samplesWord(n float64) string {
	if math.Round(n) == 1 {
		return "1 sample"
	}
	return fmt.Sprintf("%.0f samples", n)
}

// fewSamplesAdvice says how to place growth more surely: a longer window
// or a finer sampling rate.
func fewSamplesAdvice(growth, window float64, period int64) string {
	rate := rateFor(growth, period)
	return fmt.Sprintf("few samples place it: a window %.0f× longer (--duration %s) gives about √%.0f times surer shares, or start the service with GODEBUG=memprofilerate=%d to sample one allocation in %s instead of %s (about %.0f× the profiling work while it runs)",
		4.0, humanize.Seconds(4*window), 4.0, rate, humanize.Bytes(float64(rate)), humanize.Bytes(float64(period)), float64(period)/float64(rate))
}

// unplacedTitle ends the title of a growth no site's samples place.
const unplacedTitle = "; the sampled profiles cannot place it yet"

// unplacedFix is the advice when the live heap grows and no site's
// samples rose.
func unplacedFix(growth, window float64, period int64) string {
	return "the heap grows but no site's sampled in-use bytes rose: the growth is smaller than a few samples of " + humanize.Bytes(float64(period)) + "; " +
		fewSamplesAdvice(growth, window, period) + ", then diagnose again"
}

// rateFor is a MemProfileRate at which growth bytes would take about 32
// samples: a power of two, at most period and at least 512 bytes.
func rateFor(growth float64, period int64) int64 {
	if period <= 0 {
		period = 512 << 10
	}
	want := growth / 32
	rate := int64(512)
	for rate*2 <= int64(want) && rate*2 <= period {
		rate *= 2
	}
	return rate
}

// rawSamples estimates how many samples a heap profile sample stands for:
// the runtime scales each recorded allocation of size s by
// 1/(1-exp(-s/period)), so n objects of average size s came from about
// n·(1-exp(-s/period)) samples.
func rawSamples(objects, bytes, period int64) float64 {
	if objects <= 0 || bytes <= 0 || period <= 0 {
		return float64(max(objects, 0))
	}
	size := float64(bytes) / float64(objects)
	return float64(objects) * -math.Expm1(-size/float64(period))
}
