package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
	"golang.org/x/perf/benchproc"

	"github.com/heapscope/heapscope/internal/gate"
	"github.com/heapscope/heapscope/internal/option"
)

// Defaults of Options.
const (
	DefaultAlpha      = 0.05
	DefaultConfidence = 0.95
	DefaultMinRuns    = 10
)

// Errors of Compare that callers may want to tell apart.
var (
	// ErrNoResults is wrapped by the error for an input without a single
	// benchmark result.
	ErrNoResults = errors.New("no benchmark results")
	// ErrNoCommon is wrapped by the error for inputs that share no
	// benchmark.
	ErrNoCommon = errors.New("no benchmark in common")
)

// Input is one side of a comparison: the output of go test -bench, and the
// label of its column (usually the file name).
type Input struct {
	Label string
	R     io.Reader
}

// Options configure Compare. Zero fields take the defaults.
type Options struct {
	// Alpha is the significance level: a change is significant when its
	// p-value is at most Alpha, as in benchstat. 0 means DefaultAlpha.
	Alpha float64
	// Confidence is the level of the ranges around the centres. 0 means
	// DefaultConfidence.
	Confidence float64
	// MinRuns is the number of runs per side below which a comparison is
	// flagged. 0 means DefaultMinRuns.
	MinRuns int
	// Strict makes too few runs an error (Report.Errors) rather than a
	// warning.
	Strict bool
	// Ignore is a benchproc projection of keys to leave out of the
	// grouping, as benchstat's -ignore: "pkg" compares benchmarks of the
	// same name across packages.
	Ignore string
	// Gates are evaluated against every comparison they select.
	Gates []gate.Gate
}

// withDefaults returns o with the defaults of its zero fields.
func (o Options) withDefaults() Options {
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if o.Confidence == 0 {
		o.Confidence = DefaultConfidence
	}
	if o.MinRuns == 0 {
		o.MinRuns = DefaultMinRuns
	}
	return o
}

// Validate reports the first option out of range as an *option.Error.
// Compare fills the defaults of zero fields before it validates; Validate
// takes the options as they are, so a zero Alpha or MinRuns, which a
// command line gives only when its user typed 0, is an error here (a zero
// Confidence, which no flag sets, is the default still).
func (o Options) Validate() error {
	switch {
	case !(o.Alpha > 0 && o.Alpha < 1):
		return option.Errorf("Alpha", "{Alpha} %v: give a level between 0 and 1, such as 0.05", o.Alpha)
	case o.Confidence != 0 && !(o.Confidence > 0 && o.Confidence < 1):
		return option.Errorf("Confidence", "{Confidence} %v: give a level between 0 and 1, such as 0.95", o.Confidence)
	case o.MinRuns < 1:
		return option.Errorf("MinRuns", "{MinRuns} %d: give a number ≥ 1", o.MinRuns)
	}
	return nil
}

// Report is the comparison of two inputs: its tables, the gates'
// decisions and what the reader should know.
type Report struct {
	// Old and New are the labels of the inputs.
	Old, New   string
	Alpha      float64
	Confidence float64
	MinRuns    int
	Tables     []Table
	// Gates are the gates evaluated, as written.
	Gates []string
	// Decisions holds one decision per gate and comparison it selects.
	Decisions []Decision
	// Attributions, filled by Run, say where the allocations of
	// regressed benchmarks changed.
	Attributions []Attribution
	// Warnings are problems that do not stop the comparison: lines that
	// do not parse, benchmarks on one side only, too few runs, gates that
	// look the wrong way.
	Warnings []error
	// Errors are problems that make the result unusable under the
	// options (too few runs with Options.Strict). The report is still
	// complete.
	Errors []error
}

// Failed reports whether a gate failed.
func (r *Report) Failed() bool {
	return slices.ContainsFunc(r.Decisions, func(d Decision) bool { return d.Outcome == gate.Fail })
}

// Failures returns the decisions that failed.
func (r *Report) Failures() []Decision {
	var out []Decision
	for _, d := range r.Decisions {
		if d.Outcome == gate.Fail {
			out = append(out, d)
		}
	}
	return out
}

// Table compares the benchmarks of one file configuration in one unit.
type Table struct {
	// Config is the file configuration the table's results share, in
	// the order of the input (goos, goarch, pkg, cpu, …).
	Config []ConfigValue
	// Unit is the unit in base form, as benchfmt tidies it: sec/op for
	// ns/op, B/s for MB/s.
	Unit string
	// Better is +1 when higher values are better, -1 when lower values
	// are, 0 when the unit does not say.
	Better int
	// Summary names the centre: "median", or "exact" for units declared
	// exact.
	Summary string
	Rows    []Row
	// Geomean summarises the rows when there are at least two.
	Geomean *Geomean
}

// ConfigValue is one key of a file configuration.
type ConfigValue struct {
	Key, Value string
}

// configKey is a configuration as one comparable string.
func configKey(c []ConfigValue) string {
	var b strings.Builder
	for _, kv := range c {
		b.WriteString(kv.Key + "\x00" + kv.Value + "\x00")
	}
	return b.String()
}

// configGet returns the value of a configuration key, or "".
func configGet(c []ConfigValue, key string) string {
	for _, kv := range c {
		if kv.Key == key {
			return kv.Value
		}
	}
	return ""
}

// Row is one benchmark in one table.
type Row struct {
	// Name is the full benchmark name without its Benchmark prefix,
	// sub-benchmarks and GOMAXPROCS suffix included: Worker_Process-2.
	Name string
	// Old and New are nil when the benchmark is missing on that side.
	Old, New *Summary
	// Delta is nil unless both sides are present.
	Delta *Delta
	// Warnings are benchproc's: results grouped into this row that differ
	// in a key left out of the grouping.
	Warnings []error
}

// Summary summarises the runs of one benchmark on one side.
type Summary struct {
	// Center is the median (or the exact value); Lo and Hi bound its
	// confidence interval and may be infinite when there are too few
	// runs.
	Center, Lo, Hi float64
	// Range is the interval as benchstat prints it: "3%", "∞", "?".
	Range string
	// N is the number of runs.
	N int
	// Iters is the median iteration count of the runs.
	Iters int
	// Values are the measurements, sorted.
	Values   []float64
	Warnings []error
}

// Delta compares the two sides of a row.
type Delta struct {
	// Absolute is New.Center − Old.Center, in the table's unit.
	Absolute float64
	// Relative is New.Center / Old.Center − 1: 0 when both are equal,
	// ±Inf when only the old centre is 0.
	Relative float64
	// P is the p-value of the test; 0 for exact units.
	P      float64
	N1, N2 int
	Alpha  float64
	// Significant is benchstat's verdict: the p-value is at most alpha.
	Significant bool
	// Text is the change as benchstat prints it: "+12.34%", "~" when not
	// significant, "?" when the old centre is 0.
	Text     string
	Warnings []error
}

// Geomean is the summary row of a table.
type Geomean struct {
	// Old and New are the geometric means of each side's centres; valid
	// when HasOld, HasNew.
	Old, New       float64
	HasOld, HasNew bool
	// Ratio is the geometric mean of the rows' New/Old ratios; valid when
	// HasRatio.
	Ratio    float64
	HasRatio bool
	Warnings []error
}

// cell collects the measurements of one benchmark on one side.
type cell struct {
	values  []float64
	iters   []int
	residue map[benchproc.Key]struct{}
}

// tableCells collects one table's cells of both sides.
type tableCells struct {
	rows  map[benchproc.Key]struct{}
	cells [2]map[benchproc.Key]*cell
}

// Compare reads two go test -bench outputs and compares them as benchstat
// does, then evaluates o.Gates. It fails on unreadable input, an input
// without benchmark results and inputs that share no benchmark; every other
// problem is in the report's Warnings (or Errors).
func Compare(old, new Input, o Options) (*Report, error) {
	o = o.withDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if old.Label == new.Label {
		// As benchfmt.Files does for a path given twice.
		old.Label, new.Label = old.Label+"#0", new.Label+"#1"
	}
	g, err := newGrouping(o.Ignore)
	if err != nil {
		return nil, err
	}
	rep := &Report{Old: old.Label, New: new.Label, Alpha: o.Alpha, Confidence: o.Confidence, MinRuns: o.MinRuns}
	var r benchfmt.Reader
	for i, in := range [2]Input{old, new} {
		warnings, err := g.read(&r, in, i)
		rep.Warnings = append(rep.Warnings, warnings...)
		if err != nil {
			return nil, err
		}
	}
	units := r.Units()
	thresholds := benchmath.Thresholds{CompareAlpha: o.Alpha}

	common := 0
	var onlyOld, onlyNew []string
	for _, tk := range sortedKeys(g.tables) {
		tc := g.tables[tk]
		unit := tk.Get(g.unitField)
		assumption := units.GetAssumption(unit)
		t := Table{
			Config:  tableConfig(tk),
			Unit:    unit,
			Better:  units.GetBetter(unit),
			Summary: assumption.SummaryLabel(),
		}
		for _, rk := range sortedKeys(tc.rows) {
			row := Row{Name: rk.StringValues()}
			var samples [2]*benchmath.Sample
			for side := range 2 {
				c := tc.cells[side][rk]
				if c == nil {
					continue
				}
				s := benchmath.NewSample(slices.Clone(c.values), &thresholds)
				samples[side] = s
				sum := assumption.Summary(s, o.Confidence)
				res := &Summary{
					Center: sum.Center, Lo: sum.Lo, Hi: sum.Hi,
					Range:    sum.PctRangeString(),
					N:        len(s.Values),
					Iters:    medianInt(c.iters),
					Values:   s.Values,
					Warnings: append(slices.Clone(s.Warnings), sum.Warnings...),
				}
				if side == 0 {
					row.Old = res
				} else {
					row.New = res
				}
				if nsk := benchproc.NonSingularFields(sortedKeys(c.residue)); len(nsk) > 0 {
					names := make([]string, len(nsk))
					for i, f := range nsk {
						names[i] = f.Name
					}
					row.Warnings = append(row.Warnings, fmt.Errorf("benchmarks vary in %s", strings.Join(names, ", ")))
				}
			}
			switch {
			case row.Old != nil && row.New != nil:
				cmp := assumption.Compare(samples[0], samples[1])
				row.Delta = newDelta(row.Old.Center, row.New.Center, cmp)
				common++
			case row.Old != nil:
				onlyOld = appendUnique(onlyOld, row.Name)
			default:
				onlyNew = appendUnique(onlyNew, row.Name)
			}
			t.Rows = append(t.Rows, row)
		}
		if len(t.Rows) > 1 {
			t.Geomean = geomean(t.Rows)
		}
		rep.Tables = append(rep.Tables, t)
	}
	if common == 0 {
		return nil, g.noCommonError(old.Label, new.Label)
	}
	if len(onlyOld) > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Errorf("only in %s, not compared: %s", old.Label, list(onlyOld, 6)))
	}
	if len(onlyNew) > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Errorf("only in %s, not compared: %s", new.Label, list(onlyNew, 6)))
	}
	if err := checkRuns(rep, o); err != nil {
		rep.Errors = append(rep.Errors, err)
	}
	if err := evaluate(rep, o.Gates); err != nil {
		return nil, err
	}
	return rep, nil
}

// newDelta turns benchmath's comparison into a Delta.
func newDelta(old, new float64, cmp benchmath.Comparison) *Delta {
	d := &Delta{
		Absolute: new - old,
		P:        cmp.P, N1: cmp.N1, N2: cmp.N2, Alpha: cmp.Alpha,
		// FormatDelta's own test: a p-value equal to alpha is significant.
		Significant: !(cmp.P > cmp.Alpha),
		Text:        cmp.FormatDelta(old, new),
		Warnings:    cmp.Warnings,
	}
	switch {
	case old == new:
		d.Relative = 0
	case old == 0:
		d.Relative = math.Inf(int(math.Copysign(1, new)))
	default:
		d.Relative = new/old - 1
	}
	return d
}

// geomean is benchstat's summary row: the geometric mean of each side's
// centres, and of the ratios of the rows present on both sides.
func geomean(rows []Row) *Geomean {
	g := &Geomean{}
	var olds, news, ratios []float64
	nOld, bad := 0, false
	for _, r := range rows {
		if r.Old != nil {
			olds = append(olds, r.Old.Center)
			nOld++
		}
		if r.New != nil {
			news = append(news, r.New.Center)
		}
		if r.Old == nil || r.New == nil {
			continue
		}
		a, b := r.New.Center, r.Old.Center
		switch {
		case a == b:
			ratios = append(ratios, 1) // 0/0 counts as 1
		case b == 0:
			bad = true
			ratios = append(ratios, 0)
		default:
			ratios = append(ratios, a/b)
		}
	}
	if nOld != len(ratios) {
		g.Warnings = append(g.Warnings, errors.New("benchmark set differs from baseline; geomeans may not be comparable"))
	}
	g.Old, g.HasOld = geoMean(olds), true
	g.New, g.HasNew = geoMean(news), true
	if math.IsNaN(g.Old) || math.IsNaN(g.New) {
		g.HasOld, g.HasNew = !math.IsNaN(g.Old), !math.IsNaN(g.New)
		g.Warnings = append(g.Warnings, errors.New("summaries must be >0 to compute geomean"))
	}
	if !bad {
		if m := geoMean(ratios); !math.IsNaN(m) {
			g.Ratio, g.HasRatio = m, true
		} else {
			g.Warnings = append(g.Warnings, errors.New("ratios must be >0 to compute geomean"))
		}
	}
	return g
}

// geoMean is the geometric mean computed as go-moremath's stats.GeoMean
// does (a running mean of the logarithms), so that benchstat's digits come
// out: NaN for no values or a value ≤ 0.
func geoMean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	m := 0.0
	for i, x := range xs {
		if x <= 0 {
			return math.NaN()
		}
		m += (math.Log(x) - m) / float64(i+1)
	}
	return math.Exp(m)
}

// checkRuns flags comparisons with fewer runs than o.MinRuns on a side.
func checkRuns(rep *Report, o Options) error {
	var few []string
	minN := math.MaxInt
	for _, t := range rep.Tables {
		for _, r := range t.Rows {
			if r.Delta == nil {
				continue
			}
			if n := min(r.Old.N, r.New.N); n < o.MinRuns {
				few = appendUnique(few, fmt.Sprintf("%s (%d+%d)", r.Name, r.Old.N, r.New.N))
				minN = min(minN, n)
			}
		}
	}
	if len(few) == 0 {
		return nil
	}
	err := fmt.Errorf("too few runs: %d runs per side are needed for a reliable comparison, %s %s fewer; use go test -count %d",
		o.MinRuns, list(few, 4), plural(len(few), "has", "have"), o.MinRuns)
	if o.Strict {
		return err
	}
	rep.Warnings = append(rep.Warnings, err)
	return nil
}

// grouping maps results to tables and rows, as benchstat's default
// projections do: tables by .config and unit, rows by .fullname.
type grouping struct {
	tableBy, rowBy, residue *benchproc.Projection
	unitField               *benchproc.Field
	tables                  map[benchproc.Key]*tableCells
	// configs holds, per side, the values each file configuration key
	// took, to explain inputs that share no benchmark.
	configs [2]map[string][]string
	names   [2][]string
}

func newGrouping(ignore string) (*grouping, error) {
	filter, err := benchproc.NewFilter("*")
	if err != nil {
		return nil, err
	}
	var p benchproc.ProjectionParser
	tableBy, unitField, err := p.ParseWithUnit(".config", filter)
	if err != nil {
		return nil, err
	}
	rowBy, err := p.Parse(".fullname", filter)
	if err != nil {
		return nil, err
	}
	// Columns are the inputs themselves: keep .file out of the residue.
	if _, err := p.Parse(".file", filter); err != nil {
		return nil, err
	}
	if ignore != "" {
		if _, err := p.Parse(ignore, filter); err != nil {
			return nil, fmt.Errorf("ignore %q: %w (give keys such as pkg or goos,cpu)", ignore, err)
		}
	}
	return &grouping{
		tableBy: tableBy, rowBy: rowBy, residue: p.Residue(), unitField: unitField,
		tables:  make(map[benchproc.Key]*tableCells),
		configs: [2]map[string][]string{{}, {}},
	}, nil
}

// read adds the results of one input to side i. Lines that do not parse
// come back as warnings.
func (g *grouping) read(r *benchfmt.Reader, in Input, i int) ([]error, error) {
	r.Reset(in.R, in.Label, ".file", in.Label)
	var warnings []error
	n := 0
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.SyntaxError:
			warnings = append(warnings, rec)
		case *benchfmt.Result:
			n++
			for _, v := range rec.Values {
				if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
					file, line := rec.Pos()
					warnings = append(warnings, fmt.Errorf("%s:%d: %v %s is not a finite number; left out", file, line, v.Value, v.Unit))
				}
			}
			g.add(rec, i)
		}
	}
	if err := r.Err(); err != nil {
		return warnings, fmt.Errorf("read %s: %w", in.Label, err)
	}
	if n == 0 {
		err := fmt.Errorf("%w in %s: want go test -bench output, lines such as \"BenchmarkParse-8  1000  1234 ns/op  512 B/op  3 allocs/op\"", ErrNoResults, in.Label)
		if len(warnings) > 0 {
			err = fmt.Errorf("%w (first bad line: %v)", err, warnings[0])
		}
		return warnings, err
	}
	return warnings, nil
}

func (g *grouping) add(res *benchfmt.Result, side int) {
	rowKey := g.rowBy.Project(res)
	residueKey := g.residue.Project(res)
	g.names[side] = appendUnique(g.names[side], rowKey.StringValues())
	for _, c := range res.Config {
		if c.File {
			g.configs[side][c.Key] = appendUnique(g.configs[side][c.Key], string(c.Value))
		}
	}
	for ui, tk := range g.tableBy.ProjectValues(res) {
		if v := res.Values[ui].Value; math.IsNaN(v) || math.IsInf(v, 0) {
			// The U test never ends on a NaN; an infinity has no scale.
			continue
		}
		tc := g.tables[tk]
		if tc == nil {
			tc = &tableCells{
				rows:  make(map[benchproc.Key]struct{}),
				cells: [2]map[benchproc.Key]*cell{{}, {}},
			}
			g.tables[tk] = tc
		}
		c := tc.cells[side][rowKey]
		if c == nil {
			c = &cell{residue: make(map[benchproc.Key]struct{})}
			tc.cells[side][rowKey] = c
			tc.rows[rowKey] = struct{}{}
		}
		c.values = append(c.values, res.Values[ui].Value)
		c.iters = append(c.iters, res.Iters)
		c.residue[residueKey] = struct{}{}
	}
}

// noCommonError explains inputs that share no benchmark: the names on
// each side and the configuration keys whose values differ throughout.
func (g *grouping) noCommonError(oldLabel, newLabel string) error {
	err := fmt.Errorf("%w: %s has %s; %s has %s", ErrNoCommon, oldLabel, list(g.names[0], 4), newLabel, list(g.names[1], 4))
	var differ []string
	for k, olds := range g.configs[0] {
		news, ok := g.configs[1][k]
		if ok && !slices.ContainsFunc(olds, func(v string) bool { return slices.Contains(news, v) }) {
			differ = append(differ, k)
		}
	}
	sort.Strings(differ)
	if len(differ) > 0 {
		k := differ[0]
		err = fmt.Errorf("%w; the inputs differ in %s (%s: %s, %s: %s): to compare across it, ignore it with --ignore %s",
			err, strings.Join(differ, ", "), oldLabel, g.configs[0][k][0], newLabel, g.configs[1][k][0], strings.Join(differ, ","))
	}
	return err
}

// tableConfig lists the non-empty configuration values of a table key.
func tableConfig(k benchproc.Key) []ConfigValue {
	var out []ConfigValue
	for _, f := range k.Projection().FlattenedFields() {
		if f.Name == ".unit" {
			continue
		}
		if v := k.Get(f); v != "" {
			out = append(out, ConfigValue{Key: f.Name, Value: v})
		}
	}
	return out
}

func sortedKeys[V any](m map[benchproc.Key]V) []benchproc.Key {
	keys := make([]benchproc.Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	benchproc.SortKeys(keys)
	return keys
}

func medianInt(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func appendUnique(xs []string, x string) []string {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

// list joins up to n items, saying how many more there are.
func list(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
