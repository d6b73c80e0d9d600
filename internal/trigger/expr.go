package trigger

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/units"
)

// Metric names what an expression watches. The package documentation says
// what each one measures, in which unit and from which source.
type Metric string

// The metrics an expression can watch.
const (
	// Memory is the memory in use against the limit: the cgroup's working
	// set for a local process, its resident set for a remote one.
	Memory Metric = "memory"
	// RSS is the process's resident set size.
	RSS Metric = "rss"
	// GoMemLimit is the share of GOMEMLIMIT the Go runtime counts in use.
	GoMemLimit Metric = "gomemlimit"
	// RSSHigh is a new high-water mark of the resident set, by a step.
	RSSHigh Metric = "rss_high"
	// HeapTimeToLimit is the projected time until the heap after GC
	// reaches the memory limit.
	HeapTimeToLimit Metric = "heap_time_to_limit"
	// Goroutines is the number of goroutines.
	Goroutines Metric = "goroutines"
	// GoroutineGrowth is how far the goroutine count rose in the last
	// GrowthWindow.
	GoroutineGrowth Metric = "goroutine_growth"
	// GCCPU is the share of the CPU time available to the process that
	// its garbage collector used.
	GCCPU Metric = "gc_cpu"
)

// Unit is the unit of an expression's threshold and of the value it is
// compared with.
type Unit int

// The units of thresholds and values.
const (
	// Count is a plain number: goroutines.
	Count Unit = iota
	// Percent is a share from 0 to 100.
	Percent
	// Bytes is a size in bytes.
	Bytes
	// Seconds is a duration in seconds.
	Seconds
)

// String returns the unit's symbol: "", "%", "B" or "s".
func (u Unit) String() string {
	switch u {
	case Percent:
		return "%"
	case Bytes:
		return "B"
	case Seconds:
		return "s"
	}
	return ""
}

// Op is the comparison of an expression.
type Op string

// The comparisons an expression can make.
const (
	GE Op = ">="
	GT Op = ">"
	LE Op = "<="
	LT Op = "<"
)

// holds reports whether v op threshold.
func (o Op) holds(v, threshold float64) bool {
	switch o {
	case GE:
		return v >= threshold
	case GT:
		return v > threshold
	case LE:
		return v <= threshold
	case LT:
		return v < threshold
	}
	return false
}

// rising reports whether the comparison fires on high values.
func (o Op) rising() bool { return o == GE || o == GT }

// metricSpec says what a metric accepts.
type metricSpec struct {
	// units are the units its threshold may be written in.
	units []Unit
	// ops are the comparisons it allows; nil for all four.
	ops []Op
	// needs completes "METRIC needs ...", with an example.
	needs string
	// maxPercent is the largest percentage it takes.
	maxPercent float64
}

// metrics lists the metrics in the order error messages name them.
var metrics = []struct {
	name Metric
	spec metricSpec
}{
	{Memory, metricSpec{units: []Unit{Percent, Bytes}, needs: "a percentage of the limit or a size, e.g. memory>=80%", maxPercent: 100}},
	{RSS, metricSpec{units: []Unit{Bytes}, needs: "a size, e.g. rss>=1GiB"}},
	{GoMemLimit, metricSpec{units: []Unit{Percent}, needs: "a percentage of GOMEMLIMIT, e.g. gomemlimit>=90%", maxPercent: 1000}},
	{RSSHigh, metricSpec{units: []Unit{Bytes}, ops: []Op{GE, GT}, needs: "a size, the step above the last high-water mark, e.g. rss_high>=64MiB"}},
	{HeapTimeToLimit, metricSpec{units: []Unit{Seconds}, ops: []Op{LE, LT}, needs: "a duration, e.g. heap_time_to_limit<=6h"}},
	{Goroutines, metricSpec{units: []Unit{Count}, needs: "a count, e.g. goroutines>=10000"}},
	{GoroutineGrowth, metricSpec{units: []Unit{Count}, needs: "a count, e.g. goroutine_growth>=1000"}},
	{GCCPU, metricSpec{units: []Unit{Percent}, needs: "a percentage of CPU time, e.g. gc_cpu>=25%", maxPercent: 100}},
}

// specOf returns the spec of metric m.
func specOf(m Metric) (metricSpec, bool) {
	for _, e := range metrics {
		if e.name == m {
			return e.spec, true
		}
	}
	return metricSpec{}, false
}

// Metrics returns the names of the metrics an expression can watch.
func Metrics() []Metric {
	out := make([]Metric, len(metrics))
	for i, e := range metrics {
		out[i] = e.name
	}
	return out
}

// Expr is a parsed trigger expression, METRIC OP VALUE: "memory>=80%",
// "goroutines>=10000". Expressions are comparable: two that print the
// same are equal.
type Expr struct {
	// Metric is what the expression watches.
	Metric Metric
	// Op is how the metric's value is compared with Threshold.
	Op Op
	// Unit is the unit of Threshold and of the value compared with it.
	Unit Unit
	// Threshold is the value written, in Unit: 80 for "80%", bytes for a
	// size, seconds for a duration.
	Threshold float64

	// num and suffix are a percentage, size or count as written, for
	// String: 1.5 and "GiB" for "1.5GiB".
	num    float64
	suffix string
	// dur is a duration as written.
	dur time.Duration
}

// String returns the expression in the form Parse reads, without blanks,
// numbers in their shortest form and sizes in the unit they were written
// in: "memory>=1.5GiB", "heap_time_to_limit<=6h".
func (e Expr) String() string {
	if e.Metric == "" {
		return ""
	}
	var v string
	if e.Unit == Seconds {
		v = formatDuration(e.dur)
	} else {
		v = strconv.FormatFloat(e.num, 'f', -1, 64) + e.suffix
	}
	return string(e.Metric) + string(e.Op) + v
}

// MarshalText implements encoding.TextMarshaler: the expression as String
// prints it.
func (e Expr) MarshalText() ([]byte, error) {
	return []byte(e.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with Parse.
func (e *Expr) UnmarshalText(text []byte) error {
	parsed, err := Parse(string(text))
	if err != nil {
		return err
	}
	*e = parsed
	return nil
}

// Parse reads a trigger expression: METRIC OP VALUE, blanks allowed around
// each part, OP one of >=, >, <= and <. VALUE is a percentage ("80%"), a
// size with its unit (B, KiB, MiB, GiB, TiB, or KB, MB, GB, TB in powers
// of 1000: "1.5GiB"), a duration (Go's "90m", "1h30m", or days and weeks,
// "30d", "2w") or a count, as the metric requires. The error is one line
// that quotes the expression and says what is wrong with it:
//
//	trigger "memory>=80": memory needs a percentage of the limit or a size, e.g. memory>=80%
func Parse(expr string) (Expr, error) {
	e, err := parse(expr)
	if err != nil {
		return Expr{}, fmt.Errorf("trigger %q: %w", expr, err)
	}
	return e, nil
}

// parse is Parse without the expression in its errors.
func parse(expr string) (Expr, error) {
	s := strings.TrimSpace(expr)
	i := strings.IndexAny(s, "<>=!")
	if i < 0 {
		return Expr{}, fmt.Errorf("no comparison (want >=, >, <= or <), e.g. memory>=80%%")
	}
	name := strings.TrimSpace(s[:i])
	rest := s[i:]
	var op Op
	switch {
	case strings.HasPrefix(rest, ">="):
		op = GE
	case strings.HasPrefix(rest, "<="):
		op = LE
	case strings.HasPrefix(rest, ">"):
		op = GT
	case strings.HasPrefix(rest, "<"):
		op = LT
	default:
		bad := rest[:len(rest)-len(strings.TrimLeft(rest, "<>=!"))]
		return Expr{}, fmt.Errorf("comparison %q not supported (want >=, >, <= or <)", bad)
	}
	value := strings.TrimSpace(rest[len(op):])
	if name == "" {
		return Expr{}, fmt.Errorf("no metric before %s (want one of %s)", op, metricList())
	}
	m := Metric(name)
	spec, ok := specOf(m)
	if !ok {
		return Expr{}, fmt.Errorf("unknown metric %q (want one of %s)", name, metricList())
	}
	if spec.ops != nil && !slices.Contains(spec.ops, op) {
		return Expr{}, fmt.Errorf("%s takes %s, not %s, e.g. %s", m, opList(spec.ops), op, example(spec))
	}
	if value == "" {
		return Expr{}, fmt.Errorf("no value after %s: %s needs %s", op, m, spec.needs)
	}
	e := Expr{Metric: m, Op: op}
	if spec.units[0] == Seconds {
		d, err := units.ParseDuration(value)
		if err != nil {
			return Expr{}, fmt.Errorf("%w: %s needs %s", err, m, spec.needs)
		}
		if d <= 0 {
			return Expr{}, fmt.Errorf("%s needs a duration above 0, e.g. %s", m, example(spec))
		}
		e.Unit, e.dur, e.Threshold = Seconds, d, d.Seconds()
		return e, nil
	}
	numText, suffix := splitNumber(value)
	num, err := parseNumber(numText)
	if err != nil {
		if numText == "" {
			return Expr{}, fmt.Errorf("%q is not a number: %s needs %s", value, m, spec.needs)
		}
		return Expr{}, fmt.Errorf("%w: %s needs %s", err, m, spec.needs)
	}
	var unit Unit
	scale := 1.0
	switch {
	case suffix == "%":
		unit = Percent
	case suffix == "":
		unit = Count
	default:
		s, ok := units.SizeUnit(suffix)
		if !ok {
			return Expr{}, fmt.Errorf("unknown unit %q in %q (want %% or a size unit: %s)", suffix, value, units.SizeUnits)
		}
		unit, scale = Bytes, s
	}
	if !slices.Contains(spec.units, unit) {
		return Expr{}, fmt.Errorf("%s needs %s", m, spec.needs)
	}
	switch unit {
	case Percent:
		if num > spec.maxPercent {
			return Expr{}, fmt.Errorf("%s%% is above %s%%: %s needs %s", numText, strconv.FormatFloat(spec.maxPercent, 'f', -1, 64), m, spec.needs)
		}
	case Count:
		if num != float64(int64(num)) {
			return Expr{}, fmt.Errorf("%s is not a whole number: %s needs %s", numText, m, spec.needs)
		}
	}
	if m == RSSHigh && num == 0 {
		return Expr{}, fmt.Errorf("rss_high needs a step above 0, e.g. rss_high>=64MiB")
	}
	e.Unit, e.num, e.suffix, e.Threshold = unit, num, suffix, num*scale
	return e, nil
}

// splitNumber splits a value into its leading number and the unit after
// it, blanks between them dropped.
func splitNumber(v string) (num, unit string) {
	i := 0
	for i < len(v) && (v[i] >= '0' && v[i] <= '9' || v[i] == '.') {
		i++
	}
	return v[:i], strings.TrimSpace(v[i:])
}

// maxNumber bounds the numbers of a threshold: beyond it a size in bytes
// loses its meaning and a count its precision.
const maxNumber = 1 << 53

// parseNumber reads a non-negative decimal number (units.ParseNumber) of
// at most maxNumber.
func parseNumber(s string) (float64, error) {
	v, err := units.ParseNumber(s)
	if err != nil {
		return 0, err
	}
	if v > maxNumber {
		return 0, fmt.Errorf("%s is out of range", s)
	}
	return v, nil
}

// formatDuration writes d for parseDuration: whole days as "30d", others
// as time.Duration.String does without its trailing zero units ("6h",
// "1h30m", "1.5s").
func formatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// metricList names the metrics: "memory, rss, ... or gc_cpu".
func metricList() string {
	names := make([]string, len(metrics))
	for i, e := range metrics {
		names[i] = string(e.name)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// opList names comparisons: ">= or >".
func opList(ops []Op) string {
	names := make([]string, len(ops))
	for i, o := range ops {
		names[i] = string(o)
	}
	return strings.Join(names, " or ")
}

// example returns the example expression of a spec's needs.
func example(spec metricSpec) string {
	_, ex, _ := strings.Cut(spec.needs, "e.g. ")
	return ex
}
