package trigger

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/units"
)

// Defaults of a Rule and the windows of the metrics that look back.
const (
	// DefaultCooldown is a Rule's cooldown when it sets none.
	DefaultCooldown = 10 * time.Minute
	// DefaultHysteresisPoints is a Rule's hysteresis for a percentage
	// when it sets none: 5 points, 5 % of the 0–100 scale.
	DefaultHysteresisPoints = 5
	// DefaultHysteresisShare is a Rule's hysteresis for a size, count or
	// duration when it sets none: 5 % of the threshold.
	DefaultHysteresisShare = 0.05
	// GrowthWindow is how far back goroutine_growth and gc_cpu look.
	GrowthWindow = 10 * time.Minute
	// HeapPoints is how many heap-after-GC measurements, the latest,
	// heap_time_to_limit fits its slope to.
	HeapPoints = 12
	// MinHeapPoints is how many measurements heap_time_to_limit needs
	// before it projects.
	MinHeapPoints = 3
)

// maxWindowPoints caps the samples kept for a window, whatever the
// cadence: with more in GrowthWindow, the oldest are dropped.
const maxWindowPoints = 1024

// Rule is an expression with the hysteresis and the cooldown that keep it
// from firing again and again.
type Rule struct {
	// Expr is the condition.
	Expr Expr
	// Hysteresis is how far, in the expression's unit (percentage points,
	// bytes, seconds or a count), the value must move back past the
	// threshold before the rule fires again. 0 means the default:
	// DefaultHysteresisPoints for a percentage, DefaultHysteresisShare of
	// the threshold otherwise. A negative value means none. rss_high has
	// none: each firing raises its mark.
	Hysteresis float64
	// Cooldown is the least time between two firings. 0 means
	// DefaultCooldown; a negative value means none.
	Cooldown time.Duration
}

// hysteresis returns the hysteresis that applies.
func (r Rule) hysteresis() float64 {
	switch {
	case r.Hysteresis < 0:
		return 0
	case r.Hysteresis > 0:
		return r.Hysteresis
	case r.Expr.Unit == Percent:
		return DefaultHysteresisPoints
	}
	return DefaultHysteresisShare * math.Abs(r.Expr.Threshold)
}

// cooldown returns the cooldown that applies.
func (r Rule) cooldown() time.Duration {
	switch {
	case r.Cooldown < 0:
		return 0
	case r.Cooldown > 0:
		return r.Cooldown
	}
	return DefaultCooldown
}

// Firing is a rule that fired: which, on what value, when.
type Firing struct {
	// Expr is the rule's expression, as Expr.String prints it.
	Expr string `json:"expr"`
	// Value is the metric's value that crossed the threshold, in Unit.
	Value float64 `json:"value"`
	// Threshold is the value crossed, in Unit: the expression's, or for
	// rss_high the last mark plus the step.
	Threshold float64 `json:"threshold"`
	// Unit is the unit of Value and Threshold: "%", "B", "s" or "" for a
	// count.
	Unit string `json:"unit"`
	// At is the time of the sample that fired.
	At time.Time `json:"at"`
}

// String says what fired in one line: "memory>=80%: 83.2% (threshold
// 80.0%)".
func (f Firing) String() string {
	return f.Expr + ": " + FormatValue(f.Value, f.Unit) + " (threshold " + FormatValue(f.Threshold, f.Unit) + ")"
}

// FormatValue writes a trigger's value v in its unit (a Firing's Unit:
// %, B, s or none) for people: 83.5%, 34.3 MiB, 2.0 hours, 1.2k.
func FormatValue(v float64, unit string) string {
	switch unit {
	case "%":
		return humanize.Percent(v / 100)
	case "B":
		return humanize.Bytes(v)
	case "s":
		return humanize.Hours(v / 3600)
	}
	return humanize.Count(v)
}

// State is what one rule remembers of one target between samples: whether
// it fired and waits to re-arm, when it last fired, and the history the
// metrics that look back need (the rss_high mark, heap-after-GC points,
// goroutine counts, GC CPU). The zero State is armed and has no history.
// A new process of the target (another PID or start time) clears the
// history, not the firing state.
type State struct {
	// fired is set when the rule fired and the value has not yet moved
	// back past the threshold by the hysteresis.
	fired    bool
	lastFire time.Time

	// proc identifies the process the history belongs to.
	proc Sample

	// mark is rss_high's mark: the RSS at its last firing, or at the
	// first sample of the process.
	mark    float64
	hasMark bool
	// heap holds the latest heap-after-GC measurements, oldest first.
	heap []point
	// goroutines holds the goroutine counts of the last GrowthWindow in
	// increasing order of time and of value: the first is the minimum.
	goroutines []point
	// goroutinesSince is the time of the process's first goroutine count.
	goroutinesSince time.Time
	// gc holds the GC CPU points of the last GrowthWindow and the latest
	// before it, oldest first.
	gc []gcPoint
}

// point is one measurement of a series.
type point struct {
	t time.Time
	v float64
}

// gcPoint is the GC's CPU time and the CPU time available to the process
// since it started, as of one sample, in seconds of one CPU's time per
// GOMAXPROCS.
type gcPoint struct {
	t           time.Time
	gc, elapsed float64
}

// Observe feeds the rule r one sample of the target and reports whether it
// fires. It fires when the condition holds, unless it already fired and
// the value has not since moved back past the threshold by the hysteresis
// (it re-arms then), or it fired less than the cooldown ago (it fires at
// the first sample after the cooldown if the condition still holds). A
// condition that holds at the first sample fires. A sample in which the
// metric is unknown changes nothing but the history.
//
// r must be the same rule at every call with one State.
func (s *State) Observe(r Rule, smp Sample) (Firing, bool) {
	s.track(smp)
	e := r.Expr
	v, threshold, ok := s.value(e, smp)
	if !ok {
		return Firing{}, false
	}
	if s.fired && rearmed(e.Op, v, threshold, r.hysteresis()) {
		s.fired = false
	}
	if s.fired || !e.Op.holds(v, threshold) {
		return Firing{}, false
	}
	if !s.lastFire.IsZero() && smp.Time.Sub(s.lastFire) < r.cooldown() {
		return Firing{}, false
	}
	s.lastFire = smp.Time
	if e.Metric == RSSHigh {
		s.mark = v
	} else {
		s.fired = true
	}
	return Firing{Expr: e.String(), Value: v, Threshold: threshold, Unit: e.Unit.String(), At: smp.Time}, true
}

// rearmed reports whether v has moved back past threshold by h.
func rearmed(op Op, v, threshold, h float64) bool {
	if op.rising() {
		return v < threshold-h
	}
	return v > threshold+h
}

// track clears the history when smp is of another process than the one
// it holds.
func (s *State) track(smp Sample) {
	if r := DetectRestart(s.proc, smp); r.Restarted {
		s.mark, s.hasMark = 0, false
		s.heap, s.goroutines, s.gc = nil, nil, nil
		s.goroutinesSince = time.Time{}
		s.proc = Sample{}
	}
	if smp.Has(KnownPID) {
		s.proc.PID = smp.PID
		s.proc.Known |= KnownPID
	}
	if smp.Has(KnownStart) {
		s.proc.Start = smp.Start
		s.proc.Known |= KnownStart
	}
}

// value returns the value of e's metric in smp and the threshold it is
// compared with, updating the history; false when it is unknown.
func (s *State) value(e Expr, smp Sample) (v, threshold float64, ok bool) {
	threshold = e.Threshold
	switch e.Metric {
	case Memory:
		if !smp.Has(KnownMemory) {
			return 0, 0, false
		}
		if e.Unit == Bytes {
			return float64(smp.Memory), threshold, true
		}
		if !smp.Has(KnownMemoryLimit) || smp.MemoryLimit == 0 {
			return 0, 0, false
		}
		return 100 * float64(smp.Memory) / float64(smp.MemoryLimit), threshold, true
	case RSS:
		return float64(smp.RSS), threshold, smp.Has(KnownRSS)
	case GoMemLimit:
		if !smp.Has(KnownGoMemLimit|KnownGoMemory) || smp.GoMemLimit == 0 {
			return 0, 0, false
		}
		return 100 * float64(smp.GoMemory) / float64(smp.GoMemLimit), threshold, true
	case RSSHigh:
		if !smp.Has(KnownRSS) {
			return 0, 0, false
		}
		v = float64(smp.RSS)
		if !s.hasMark {
			s.mark, s.hasMark = v, true
			return 0, 0, false
		}
		return v, s.mark + threshold, true
	case HeapTimeToLimit:
		return s.timeToLimit(smp, threshold)
	case Goroutines:
		return float64(smp.Goroutines), threshold, smp.Has(KnownGoroutines)
	case GoroutineGrowth:
		return s.goroutineGrowth(smp, threshold)
	case GCCPU:
		return s.gcCPU(smp, threshold)
	}
	return 0, 0, false
}

// timeToLimit records the sample's heap after GC and projects, from the
// least-squares slope of the latest HeapPoints, the seconds until the heap
// reaches the smallest of GOMEMLIMIT and the memory limit. It is +Inf when
// the heap does not grow, and known only in a sample that brings a
// measurement.
func (s *State) timeToLimit(smp Sample, threshold float64) (float64, float64, bool) {
	if !smp.Has(KnownHeapAfterGC) {
		return 0, 0, false
	}
	p := point{smp.Time, float64(smp.HeapAfterGC)}
	switch n := len(s.heap); {
	case n > 0 && !p.t.After(s.heap[n-1].t):
		s.heap[n-1] = p // not later than the last: it replaces it
	case n == HeapPoints:
		copy(s.heap, s.heap[1:])
		s.heap[n-1] = p
	default:
		s.heap = append(s.heap, p)
	}
	limit, ok := heapLimit(smp)
	if !ok || len(s.heap) < MinHeapPoints {
		return 0, 0, false
	}
	slope := slopePerSecond(s.heap)
	switch {
	case p.v >= limit:
		return 0, threshold, true
	case slope <= 0:
		return math.Inf(1), threshold, true
	}
	return (limit - p.v) / slope, threshold, true
}

// heapLimit returns the limit the heap grows towards: the smallest known
// of GOMEMLIMIT and the memory limit.
func heapLimit(smp Sample) (float64, bool) {
	limit := math.Inf(1)
	if smp.Has(KnownGoMemLimit) && smp.GoMemLimit > 0 {
		limit = float64(smp.GoMemLimit)
	}
	if smp.Has(KnownMemoryLimit) && smp.MemoryLimit > 0 {
		limit = math.Min(limit, float64(smp.MemoryLimit))
	}
	return limit, !math.IsInf(limit, 1)
}

// slopePerSecond fits a line to the points by least squares and returns
// its slope in value per second.
func slopePerSecond(ps []point) float64 {
	t0 := ps[0].t
	var sx, sy float64
	for _, p := range ps {
		sx += p.t.Sub(t0).Seconds()
		sy += p.v
	}
	n := float64(len(ps))
	mx, my := sx/n, sy/n
	var sxy, sxx float64
	for _, p := range ps {
		dx := p.t.Sub(t0).Seconds() - mx
		sxy += dx * (p.v - my)
		sxx += dx * dx
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
}

// goroutineGrowth records the sample's goroutine count and returns how far
// it is above the lowest count of the last GrowthWindow; unknown at the
// process's first count.
func (s *State) goroutineGrowth(smp Sample, threshold float64) (float64, float64, bool) {
	if !smp.Has(KnownGoroutines) {
		return 0, 0, false
	}
	p := point{smp.Time, float64(smp.Goroutines)}
	from := p.t.Add(-GrowthWindow)
	q := s.goroutines
	for len(q) > 0 && q[0].t.Before(from) {
		q = q[1:]
	}
	for len(q) > 0 && q[len(q)-1].v >= p.v {
		q = q[:len(q)-1]
	}
	if len(q) == maxWindowPoints {
		q = q[1:]
	}
	s.goroutines = append(q, p)
	if s.goroutinesSince.IsZero() {
		s.goroutinesSince = p.t
	}
	if !p.t.After(s.goroutinesSince) {
		return 0, 0, false
	}
	return p.v - s.goroutines[0].v, threshold, true
}

// gcCPU records the sample's GC CPU figures and returns the share, in
// percent, of the CPU time available to the process that the GC used
// between the oldest sample of the last GrowthWindow (or the latest
// before, if none is that recent) and this one. MemStats' GCCPUFraction f
// is the share since the process started as of the last GC's end, so the
// GC's CPU time is f × (LastGC − Start) and the time available t − Start,
// both per GOMAXPROCS: the share assumes GOMAXPROCS did not change, and
// counts a cycle when it ends. Unknown at the process's first sample with
// these figures.
func (s *State) gcCPU(smp Sample, threshold float64) (float64, float64, bool) {
	if !smp.Has(KnownGCCPU|KnownStart) || !smp.LastGC.After(smp.Start) || !smp.Time.After(smp.LastGC.Add(-time.Second)) {
		return 0, 0, false
	}
	p := gcPoint{
		t:       smp.Time,
		gc:      smp.GCCPUFraction * smp.LastGC.Sub(smp.Start).Seconds(),
		elapsed: smp.Time.Sub(smp.Start).Seconds(),
	}
	if n := len(s.gc); n > 0 && !p.t.After(s.gc[n-1].t) {
		return 0, 0, false // out of order
	}
	from := p.t.Add(-GrowthWindow)
	// Keep the latest point before the window as the base when no other
	// is in it.
	for len(s.gc) > 1 && s.gc[1].t.Before(from) {
		s.gc = s.gc[1:]
	}
	if len(s.gc) == maxWindowPoints {
		s.gc = s.gc[1:]
	}
	var base gcPoint
	if len(s.gc) > 0 {
		base = s.gc[0]
		if base.t.Before(from) && len(s.gc) > 1 {
			base = s.gc[1]
		}
	}
	s.gc = append(s.gc, p)
	if len(s.gc) == 1 || p.elapsed <= base.elapsed {
		return 0, 0, false
	}
	share := (p.gc - base.gc) / (p.elapsed - base.elapsed)
	return 100 * math.Max(0, math.Min(1, share)), threshold, true
}

// NewRule makes the rule a configuration writes: the expression, its
// hysteresis as written ("5%" for a percentage, a size such as "64MiB", a
// duration such as "30m", a count; "" for the default) and its cooldown.
// The hysteresis must be in the expression's unit.
func NewRule(expr, hysteresis string, cooldown time.Duration) (Rule, error) {
	e, err := Parse(expr)
	if err != nil {
		return Rule{}, err
	}
	r := Rule{Expr: e, Cooldown: cooldown}
	if cooldown == 0 {
		r.Cooldown = -1 // written as 0: none
	}
	if hysteresis == "" {
		return r, nil
	}
	h, err := parseHysteresis(e, strings.TrimSpace(hysteresis))
	if err != nil {
		return Rule{}, fmt.Errorf("trigger %q: hysteresis %q: %w", expr, hysteresis, err)
	}
	r.Hysteresis = h
	if h == 0 {
		r.Hysteresis = -1 // written as 0: none
	}
	return r, nil
}

func parseHysteresis(e Expr, s string) (float64, error) {
	if e.Unit == Seconds {
		d, err := units.ParseDuration(s)
		if err != nil {
			return 0, err
		}
		return d.Seconds(), nil
	}
	numText, suffix := splitNumber(s)
	num, err := parseNumber(numText)
	if err != nil {
		return 0, err
	}
	switch {
	case e.Unit == Percent && suffix == "%", e.Unit == Count && suffix == "":
		return num, nil
	case e.Unit == Bytes:
		if scale, ok := units.SizeUnit(suffix); ok && suffix != "" {
			return num * scale, nil
		}
	}
	return 0, fmt.Errorf("give it in the unit of %s, e.g. %s", e.Metric, hysteresisExample(e.Unit))
}

func hysteresisExample(u Unit) string {
	switch u {
	case Percent:
		return "5%"
	case Bytes:
		return "64MiB"
	case Seconds:
		return "30m"
	}
	return "100"
}

// Check parses expr and returns its error: what a configuration reader
// calls to check a trigger where it was written.
func Check(expr string) error {
	_, err := Parse(expr)
	return err
}

// CannotFire says why the rule can never fire on a target that gives
// samples like smp: the limit its threshold is a share of is not known
// (no container limit, no GOMEMLIMIT), as opposed to a figure missing
// from one sample. "" when it can fire.
func (r Rule) CannotFire(smp Sample) string {
	e := r.Expr
	switch {
	case e.Metric == Memory && e.Unit == Percent && (!smp.Has(KnownMemoryLimit) || smp.MemoryLimit == 0):
		return "the target has no memory limit to take a share of (no container limit, no memory_limit setting); give memory_limit, or a size such as memory>=2GiB"
	case e.Metric == GoMemLimit && (!smp.Has(KnownGoMemLimit) || smp.GoMemLimit == 0):
		return "the target runs without GOMEMLIMIT; set it, or watch memory>=N% of its container's limit"
	case e.Metric == HeapTimeToLimit && (!smp.Has(KnownMemoryLimit) || smp.MemoryLimit == 0) && (!smp.Has(KnownGoMemLimit) || smp.GoMemLimit == 0):
		return "the target has neither a memory limit nor GOMEMLIMIT for its heap to reach; give memory_limit or set GOMEMLIMIT"
	}
	return ""
}
