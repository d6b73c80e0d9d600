package compare

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/bench"
	"github.com/heapscope/heapscope/internal/gate"
	"github.com/heapscope/heapscope/internal/option"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
)

// Sample is one run of a side: a run directory, or one window of a
// repeated run.
type Sample struct {
	// Label names the run, such as its directory.
	Label string
	Run   *result.Run
	// Allocs is the run's allocs-delta profile (alloc_space and
	// alloc_objects over its window); nil when the run has none.
	Allocs *profile.Profile
}

// Side is the runs of one side of a comparison.
type Side struct {
	// Label names the side in tables, such as its first run's directory.
	Label   string
	Samples []Sample
}

// Options configure Compare. Zero fields take the defaults.
type Options struct {
	// Alpha is the significance level of the tests; 0 means
	// bench.DefaultAlpha (0.05).
	Alpha float64
	// Sites caps the lists of sites that grew and shrank; 0 means
	// DefaultSites.
	Sites int
	// Gates are evaluated against the figures they name.
	Gates []gate.Gate
}

// Validate reports the first option out of range as an *option.Error.
// Compare fills the defaults of zero fields before it validates; Validate
// takes the options as they are, so a zero Sites or Alpha, which a
// command line gives only when its user typed 0, is an error here.
func (o Options) Validate() error {
	switch {
	case o.Sites < 1:
		return option.Errorf("Sites", "{Sites} %d: give a number ≥ 1", o.Sites)
	case !(o.Alpha > 0 && o.Alpha < 1):
		return option.Errorf("Alpha", "{Alpha} %v: give a level between 0 and 1, such as 0.05", o.Alpha)
	}
	return nil
}

// DefaultSites is how many sites each list keeps unless told otherwise.
const DefaultSites = 10

// Per-unit normalisations of site deltas.
const (
	PerRequest = "request"
	PerSecond  = "second"
)

// Comparison is the result of Compare.
type Comparison struct {
	Before SideInfo `json:"before"`
	After  SideInfo `json:"after"`
	Alpha  float64  `json:"alpha"`
	// Tested is true when a side has several runs: figures and sites then
	// carry a significance test.
	Tested  bool           `json:"tested"`
	Figures []FigureChange `json:"figures"`
	Notes   []Note         `json:"notes"`
	// PerUnit says what site values are per: "request" or "second".
	PerUnit string       `json:"per_unit"`
	Grew    []SiteChange `json:"sites_grew"`
	Shrank  []SiteChange `json:"sites_shrank"`
	// Appeared and Disappeared are the findings of one side only, by id
	// and site.
	Appeared    []result.Finding `json:"findings_appeared"`
	Disappeared []result.Finding `json:"findings_disappeared"`
	Decisions   []Decision       `json:"gates,omitempty"`
	Warnings    []string         `json:"warnings,omitempty"`
}

// SideInfo names a side and its runs.
type SideInfo struct {
	Label string   `json:"label"`
	Runs  []string `json:"runs"`
}

// Stat is a figure's value on one side: the median over its runs and
// their range.
type Stat struct {
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	N      int       `json:"n"`
	Values []float64 `json:"values"`
}

// Test is a Mann-Whitney U test of the two sides' values.
type Test struct {
	P           float64 `json:"p"`
	N1          int     `json:"n1"`
	N2          int     `json:"n2"`
	Significant bool    `json:"significant"`
	// Warning says why the test could not find a difference, such as too
	// few runs.
	Warning string `json:"warning,omitempty"`
}

// FigureChange is one headline figure before and after.
type FigureChange struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	Unit  string `json:"unit"`
	// Better is -1 when lower is better, +1 when higher is.
	Better int `json:"better"`
	// Before and After are nil when no run of the side has the figure.
	Before *Stat `json:"before"`
	After  *Stat `json:"after"`
	// Delta is After − Before of the medians; Relative is Delta / Before,
	// nil when Before is 0 or a side lacks the figure.
	Delta    float64  `json:"delta"`
	Relative *float64 `json:"relative"`
	// Test is set when a side has several runs.
	Test *Test `json:"test,omitempty"`
}

// Compared reports whether both sides have the figure.
func (f FigureChange) Compared() bool { return f.Before != nil && f.After != nil }

// Significant reports whether the change is outside noise: the test says
// so. Without repeated runs nothing is.
func (f FigureChange) Significant() bool { return f.Test != nil && f.Test.Significant }

// SiteChange is one source line's allocations per request (or per second)
// before and after.
type SiteChange struct {
	Function string `json:"function"`
	File     string `json:"file"`
	Line     int64  `json:"line"`
	// Bytes and Objects are per PerUnit of the Comparison.
	BytesBefore   Stat     `json:"bytes_before"`
	BytesAfter    Stat     `json:"bytes_after"`
	BytesDelta    float64  `json:"bytes_delta"`
	BytesRelative *float64 `json:"bytes_relative"`
	ObjectsBefore float64  `json:"objects_before"`
	ObjectsAfter  float64  `json:"objects_after"`
	// SamplesBefore and SamplesAfter are about how many heap profile
	// samples the site's bytes stand on, over all runs of a side: its
	// bytes in units of the profiles' sampling period.
	SamplesBefore float64 `json:"samples_before"`
	SamplesAfter  float64 `json:"samples_after"`
	Test          *Test   `json:"test,omitempty"`
}

// Significant reports whether the site's change in bytes is outside noise.
func (s SiteChange) Significant() bool { return s.Test != nil && s.Test.Significant }

// MinSiteSamples is how many samples a site's change must stand on to be
// told as one when no test can say it is outside noise (one run a side):
// with fewer, a sample or two that fell one way is the change.
const MinSiteSamples = 4

// Sampled reports whether the change stands on MinSiteSamples samples or
// more.
func (s SiteChange) Sampled() bool {
	return math.Abs(s.SamplesAfter-s.SamplesBefore) >= MinSiteSamples
}

// Note says how the runs differ in more than the code under test.
type Note struct {
	// Kind is stable: target, duration, load, rate, go_version,
	// dependencies, env, status, profiles.
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// Decision is one gate's verdict.
type Decision struct {
	Gate string `json:"gate"`
	// Figure is the JSON name the gate applies to; Sites the functions it
	// selected when the gate names some.
	Figure string  `json:"figure"`
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	// Change is relative (a fraction) or absolute, as the gate's
	// threshold; nil when relative and Before is 0 with After 0.
	Change   *float64     `json:"change"`
	Relative bool         `json:"relative"`
	Beyond   bool         `json:"beyond"`
	Test     *Test        `json:"test,omitempty"`
	Outcome  gate.Outcome `json:"outcome"`
	Reason   string       `json:"reason"`
}

// Failed reports whether a gate failed.
func (c *Comparison) Failed() bool {
	return slices.ContainsFunc(c.Decisions, func(d Decision) bool { return d.Outcome == gate.Fail })
}

// GateError says which gates failed, as one error; nil when none did.
func (c *Comparison) GateError() error {
	var parts []string
	for _, d := range c.Decisions {
		if d.Outcome == gate.Fail {
			parts = append(parts, d.Gate+": "+d.Reason)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d gates failed: %s", len(parts), len(c.Decisions), strings.Join(parts, "; "))
}

// Figure returns the change of the figure of that JSON name.
func (c *Comparison) Figure(name string) (FigureChange, bool) {
	for _, f := range c.Figures {
		if f.Name == name {
			return f, true
		}
	}
	return FigureChange{}, false
}

// ErrEmptySide is wrapped by the error for a side without runs.
var ErrEmptySide = errors.New("no runs")

// Compare compares the runs of two sides. It fails on a side without runs,
// a run without its result, an allocs-delta profile without alloc_space
// and a gate that names no figure; everything else is in the Comparison's
// notes and warnings.
func Compare(before, after Side, o Options) (*Comparison, error) {
	if o.Alpha == 0 {
		o.Alpha = bench.DefaultAlpha
	}
	if o.Sites <= 0 {
		o.Sites = DefaultSites
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	for _, s := range []struct {
		name string
		side Side
	}{{"before", before}, {"after", after}} {
		if len(s.side.Samples) == 0 {
			return nil, fmt.Errorf("compare: %s side: %w", s.name, ErrEmptySide)
		}
		for i, smp := range s.side.Samples {
			if smp.Run == nil {
				return nil, fmt.Errorf("compare: %s side, run %d (%s): no result", s.name, i+1, smp.Label)
			}
		}
	}
	c := &Comparison{
		Before:      sideInfo(before),
		After:       sideInfo(after),
		Alpha:       o.Alpha,
		Tested:      len(before.Samples) > 1 || len(after.Samples) > 1,
		Notes:       []Note{},
		Grew:        []SiteChange{},
		Shrank:      []SiteChange{},
		Appeared:    []result.Finding{},
		Disappeared: []result.Finding{},
	}
	for _, f := range result.Figures {
		c.Figures = append(c.Figures, c.figure(f, before, after))
	}
	c.Notes = notes(before, after)
	sites, err := c.sites(before, after, o.Sites)
	if err != nil {
		return nil, err
	}
	c.Appeared, c.Disappeared = findingsDiff(before, after)
	if err := c.evaluate(o.Gates, before, after, sites); err != nil {
		return nil, err
	}
	return c, nil
}

func sideInfo(s Side) SideInfo {
	info := SideInfo{Label: s.Label, Runs: make([]string, len(s.Samples))}
	for i, smp := range s.Samples {
		info.Runs[i] = smp.Label
	}
	if info.Label == "" {
		info.Label = info.Runs[0]
	}
	return info
}

// values returns the figure of every run of the side that has it.
func values(f result.Figure, s Side) []float64 {
	var vs []float64
	for _, smp := range s.Samples {
		if v, ok := f.Get(smp.Run); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			vs = append(vs, v)
		}
	}
	return vs
}

func (c *Comparison) figure(f result.Figure, before, after Side) FigureChange {
	fc := FigureChange{Name: f.Name, Label: f.Label, Unit: f.Unit, Better: f.Better}
	b, a := values(f, before), values(f, after)
	fc.Before, fc.After = stat(b), stat(a)
	if !fc.Compared() {
		return fc
	}
	fc.Delta, fc.Relative = change(fc.Before.Median, fc.After.Median)
	if c.Tested {
		fc.Test = c.test(b, a)
	}
	return fc
}

// stat summarises values; nil for none.
func stat(vs []float64) *Stat {
	if len(vs) == 0 {
		return nil
	}
	s := slices.Sorted(slices.Values(vs))
	return &Stat{Median: median(s), Min: s[0], Max: s[len(s)-1], N: len(s), Values: s}
}

// median of sorted values, as benchmath's: the mean of the middle two for
// an even count.
func median(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// change returns after − before and the relative change, nil when before
// is 0.
func change(before, after float64) (float64, *float64) {
	d := after - before
	switch {
	case before == after:
		z := 0.0
		return d, &z
	case before == 0:
		return d, nil
	}
	r := d / before
	return d, &r
}

// test runs benchmath's Mann-Whitney U test, as bench.CompareSamples does
// for benchmarks.
func (c *Comparison) test(before, after []float64) *Test {
	_, _, d := bench.CompareSamples(before, after, c.Alpha, 0)
	t := &Test{P: d.P, N1: d.N1, N2: d.N2, Significant: d.Significant && before != nil && after != nil}
	if len(d.Warnings) > 0 {
		t.Warning = d.Warnings[0].Error()
	}
	if !t.Significant && t.Warning == "" && (len(before) < 4 || len(after) < 4) {
		t.Warning = fmt.Sprintf("%d+%d runs are too few to detect a difference at alpha %v", len(before), len(after), c.Alpha)
	}
	return t
}

// sortSites orders sites by the size of their change, then by name, so
// output is deterministic.
func sortSites(s []SiteChange, grew bool) {
	slices.SortFunc(s, func(a, b SiteChange) int {
		x := cmp.Compare(b.BytesDelta, a.BytesDelta)
		if !grew {
			x = -x
		}
		if x != 0 {
			return x
		}
		if x := cmp.Compare(a.Function, b.Function); x != 0 {
			return x
		}
		if x := cmp.Compare(a.File, b.File); x != 0 {
			return x
		}
		return cmp.Compare(a.Line, b.Line)
	})
}

// siteKey identifies a source line.
type siteKey struct {
	function, file string
	line           int64
}

// siteValues holds, for each run of each side, what a site allocated per
// unit: bytes and objects.
type siteValues struct {
	bytes, objects [2][]float64
	// samples are the site's bytes over every run of a side in units of
	// the profiles' sampling period: about how many samples they stand on.
	samples [2]float64
}

// siteTable is every site of both sides, each with one value per run that
// has a profile (0 where the site did not allocate).
type siteTable struct {
	keys   []siteKey
	values map[siteKey]*siteValues
	runs   [2]int
}

// denominators returns, per run of the side, what its allocations are
// divided by: requests completed, or seconds of the window.
func denominator(r *result.Run, perUnit string) float64 {
	if perUnit == PerRequest {
		return float64(r.PerRequest.Requests)
	}
	return r.Window.DurationSeconds
}

func hasRequests(s Side) bool {
	for _, smp := range s.Samples {
		if smp.Run.PerRequest == nil || smp.Run.PerRequest.Requests == 0 {
			return false
		}
	}
	return true
}

func (c *Comparison) sites(before, after Side, n int) (*siteTable, error) {
	c.PerUnit = PerSecond
	if hasRequests(before) && hasRequests(after) {
		c.PerUnit = PerRequest
	}
	t := &siteTable{values: map[siteKey]*siteValues{}}
	for side, s := range [2]Side{before, after} {
		for _, smp := range s.Samples {
			if smp.Allocs == nil {
				continue
			}
			den := denominator(smp.Run, c.PerUnit)
			if !(den > 0) {
				c.Warnings = append(c.Warnings, fmt.Sprintf("run %s: no window duration, its sites are left out", smp.Label))
				continue
			}
			if err := t.add(side, smp, den); err != nil {
				return nil, err
			}
		}
	}
	if t.runs[0] == 0 || t.runs[1] == 0 {
		return t, nil
	}
	for _, k := range t.keys {
		v := t.values[k]
		for side := range 2 {
			// Runs where the site did not allocate count as 0.
			for len(v.bytes[side]) < t.runs[side] {
				v.bytes[side] = append(v.bytes[side], 0)
				v.objects[side] = append(v.objects[side], 0)
			}
		}
		sc := SiteChange{Function: k.function, File: k.file, Line: k.line}
		sc.BytesBefore, sc.BytesAfter = *stat(v.bytes[0]), *stat(v.bytes[1])
		sc.ObjectsBefore, sc.ObjectsAfter = stat(v.objects[0]).Median, stat(v.objects[1]).Median
		sc.BytesDelta, sc.BytesRelative = change(sc.BytesBefore.Median, sc.BytesAfter.Median)
		sc.SamplesBefore, sc.SamplesAfter = v.samples[0], v.samples[1]
		if c.Tested {
			sc.Test = c.test(v.bytes[0], v.bytes[1])
		}
		switch {
		case sc.BytesDelta > 0:
			c.Grew = append(c.Grew, sc)
		case sc.BytesDelta < 0:
			c.Shrank = append(c.Shrank, sc)
		}
	}
	sortSites(c.Grew, true)
	sortSites(c.Shrank, false)
	c.Grew = c.Grew[:min(n, len(c.Grew))]
	c.Shrank = c.Shrank[:min(n, len(c.Shrank))]
	return t, nil
}

// add adds one run's sites, divided by den, to a side. Sites the run did
// not see before get zeros for the side's earlier runs.
func (t *siteTable) add(side int, smp Sample, den float64) error {
	sums := map[siteKey][2]float64{}
	for i, typ := range []string{"alloc_space", "alloc_objects"} {
		tab, err := pprofx.Top(smp.Allocs, pprofx.TopOptions{Sample: typ})
		if err != nil {
			return fmt.Errorf("compare: allocs-delta profile of %s: %w", smp.Label, err)
		}
		for _, s := range tab.Sites {
			k := siteKey{s.Function, s.File, s.Line}
			v := sums[k]
			v[i] += float64(s.Flat)
			sums[k] = v
		}
	}
	keys := make([]siteKey, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b siteKey) int {
		return cmp.Or(cmp.Compare(a.function, b.function), cmp.Compare(a.file, b.file), cmp.Compare(a.line, b.line))
	})
	for _, k := range keys {
		v := t.values[k]
		if v == nil {
			v = &siteValues{}
			t.values[k] = v
			t.keys = append(t.keys, k)
		}
		for len(v.bytes[side]) < t.runs[side] {
			v.bytes[side] = append(v.bytes[side], 0)
			v.objects[side] = append(v.objects[side], 0)
		}
		v.bytes[side] = append(v.bytes[side], sums[k][0]/den)
		v.objects[side] = append(v.objects[side], sums[k][1]/den)
		if period := smp.Allocs.Period; period > 0 {
			v.samples[side] += sums[k][0] / float64(period)
		}
	}
	t.runs[side]++
	return nil
}

// findingKey identifies a finding across runs: its id and site.
type findingKey struct {
	id, function, file string
	line               int64
}

func findingsOf(s Side) (map[findingKey]result.Finding, []findingKey) {
	m := map[findingKey]result.Finding{}
	var keys []findingKey
	for _, smp := range s.Samples {
		for _, f := range smp.Run.Findings {
			k := findingKey{f.ID, f.Function, f.File, f.Line}
			if _, ok := m[k]; !ok {
				m[k] = f
				keys = append(keys, k)
			}
		}
	}
	return m, keys
}

// findingsDiff returns the findings of after that before lacks, and those
// of before that after lacks, in the order the runs list them.
func findingsDiff(before, after Side) (appeared, disappeared []result.Finding) {
	b, bk := findingsOf(before)
	a, ak := findingsOf(after)
	appeared, disappeared = []result.Finding{}, []result.Finding{}
	for _, k := range ak {
		if _, ok := b[k]; !ok {
			appeared = append(appeared, a[k])
		}
	}
	for _, k := range bk {
		if _, ok := a[k]; !ok {
			disappeared = append(disappeared, b[k])
		}
	}
	return appeared, disappeared
}
