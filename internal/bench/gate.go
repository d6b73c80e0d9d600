package bench

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/perf/benchunit"
)

// GateSyntax is the accepted form of a gate, for messages and help.
const GateSyntax = `[NAME_REGEX:]UNIT>THRESHOLD or [NAME_REGEX:]UNIT<THRESHOLD, ` +
	`THRESHOLD a relative change such as +5% or an absolute one in the unit such as 100; ` +
	`for example 'B/op>+5%', 'Process.*:allocs/op>+0%', 'sec/op>+10%', 'ns/op>50', 'B/s<-5%'`

// Gate fails a comparison whose change is significant and beyond a
// threshold. It is written [NAME_REGEX:]UNIT>THRESHOLD, or with < for
// units where lower is worse:
//
//	B/op>+5%                  bytes per op grow by more than 5 %
//	Process.*:allocs/op>+0%   any growth of allocations in benchmarks matching Process.*
//	ns/op>50                  time per op grows by more than 50 ns
//	MB/s<-5%                  throughput falls by more than 5 %
//
// A threshold without a sign points the way of the operator (> +T, < -T).
// NAME_REGEX is searched for, unanchored, in the full benchmark name as the
// table shows it (Worker_Process-2) and in the name with its Benchmark
// prefix. The unit is matched after tidying, so ns/op gates sec/op and an
// absolute threshold is converted with it (50 ns/op is 5e-8 sec/op).
type Gate struct {
	// Expr is the gate as written.
	Expr string
	// Name selects benchmarks; nil selects all of them.
	Name *regexp.Regexp
	// Unit is the tidied unit the gate applies to.
	Unit string
	// Higher is true for >: the gate fails on changes above Threshold;
	// false for <: it fails on changes below it.
	Higher bool
	// Threshold is a fraction (0.05 for +5%) when Relative, otherwise an
	// absolute change in Unit.
	Threshold float64
	Relative  bool
	// display is the threshold as written, with the sign made explicit.
	display string
}

// ParseGate parses a gate expression. Its errors quote the accepted form.
func ParseGate(expr string) (Gate, error) {
	s := strings.TrimSpace(expr)
	bad := func(why string) (Gate, error) {
		return Gate{}, fmt.Errorf("gate %q: %s; want %s", expr, why, GateSyntax)
	}
	// The threshold holds neither < nor >, the name's regexp may.
	i := strings.LastIndexAny(s, "<>")
	if i < 0 {
		return bad("no > or < between the unit and the threshold")
	}
	g := Gate{Expr: s, Higher: s[i] == '>'}
	lhs, rhs := s[:i], strings.TrimSpace(s[i+1:])
	name, unit := "", lhs
	if j := strings.LastIndexByte(lhs, ':'); j >= 0 {
		name, unit = lhs[:j], lhs[j+1:]
	}
	unit = strings.TrimSpace(unit)
	switch {
	case strings.HasPrefix(rhs, "=") || strings.HasSuffix(lhs, "=") || strings.HasSuffix(lhs, "<") || strings.HasSuffix(lhs, ">"):
		return bad("a single > or < compares, not >= or <=")
	case unit == "":
		return bad("no unit before " + string(s[i]))
	case strings.ContainsAny(unit, " \t=<>"):
		return bad(fmt.Sprintf("unit %q has a space or an operator in it", unit))
	}
	if name = strings.TrimSpace(name); name != "" {
		re, err := regexp.Compile(name)
		if err != nil {
			return bad(fmt.Sprintf("name %q is not a regular expression: %v", name, err))
		}
		g.Name = re
	}

	num := rhs
	g.Relative = strings.HasSuffix(num, "%")
	num = strings.TrimSpace(strings.TrimSuffix(num, "%"))
	if num == "" {
		return bad("no threshold after " + string(s[i]))
	}
	signed := num[0] == '+' || num[0] == '-'
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || strings.ContainsAny(num, "xXpP_") {
		return bad(fmt.Sprintf("threshold %q is not a number", rhs))
	}
	if !signed && !g.Higher {
		v = -v
	}
	if g.Relative {
		g.display = strconv.FormatFloat(v, 'f', -1, 64) + "%"
		g.Threshold = v / 100
		_, g.Unit = benchunit.Tidy(1, unit)
	} else {
		g.display = strconv.FormatFloat(v, 'f', -1, 64) + " " + unit
		g.Threshold, g.Unit = benchunit.Tidy(v, unit)
	}
	if v >= 0 {
		g.display = "+" + g.display
	}
	return g, nil
}

// String returns the gate as written.
func (g Gate) String() string { return g.Expr }

// matches reports whether the gate selects the benchmark named name.
func (g Gate) matches(name string) bool {
	return g.Name == nil || g.Name.MatchString(name) || g.Name.MatchString("Benchmark"+name)
}

// beyond reports whether a change is beyond the threshold, strictly: a
// change equal to it up to rounding (105/100−1 is 0.050000000000000044) is
// not beyond.
func (g Gate) beyond(change float64) bool {
	if math.IsNaN(change) {
		return false
	}
	over := change - g.Threshold
	if !g.Higher {
		over = -over
	}
	if math.IsInf(over, 0) {
		return over > 0
	}
	return over > 1e-9*max(math.Abs(g.Threshold), math.Abs(change))
}

// Outcome is what a gate decided for one comparison.
type Outcome string

// The outcomes of a gate.
const (
	// Pass: the change is within the threshold (significant or not).
	Pass Outcome = "pass"
	// Warn: the change is beyond the threshold but not significant; more
	// runs would decide.
	Warn Outcome = "warn"
	// Fail: the change is significant and beyond the threshold.
	Fail Outcome = "fail"
)

// Decision is one gate's verdict on one benchmark of one table.
type Decision struct {
	Gate      string
	Benchmark string
	Config    []ConfigValue
	Unit      string
	// Old and New are the centres compared.
	Old, New float64
	// Change is the change the threshold applies to: relative (a
	// fraction) or absolute, as the gate's threshold.
	Change   float64
	Relative bool
	P        float64
	N1, N2   int
	// Significant and Beyond are the two conditions of a failure.
	Significant, Beyond bool
	Outcome             Outcome
	// Reason says why, in a sentence: "B/op +38.20% is beyond +5% and
	// significant (p=0.000 n=10)".
	Reason string
}

// evaluate applies the gates to every row they select. A gate whose unit
// no benchmark reports, or whose name selects no benchmark compared on both
// sides, is an error: a gate that checks nothing must not pass silently.
func evaluate(rep *Report, gates []Gate) error {
	var errs []error
	for _, g := range gates {
		rep.Gates = append(rep.Gates, g.Expr)
		unitSeen, matched := false, 0
		for _, t := range rep.Tables {
			if t.Unit != g.Unit {
				continue
			}
			unitSeen = true
			if (t.Better > 0 && g.Higher && g.Threshold >= 0) || (t.Better < 0 && !g.Higher && g.Threshold <= 0) {
				w := fmt.Errorf("gate %s fails on improvements: %s is better when %s", g.Expr, t.Unit, map[bool]string{true: "higher", false: "lower"}[t.Better > 0])
				if !containsErr(rep.Warnings, w) {
					rep.Warnings = append(rep.Warnings, w)
				}
			}
			for _, r := range t.Rows {
				if r.Delta == nil || !g.matches(r.Name) {
					continue
				}
				matched++
				rep.Decisions = append(rep.Decisions, decide(g, t, r))
			}
		}
		switch {
		case !unitSeen:
			errs = append(errs, fmt.Errorf("gate %s: no benchmark reports %s (the inputs have %s)", g.Expr, g.Unit, strings.Join(rep.units(), ", ")))
		case matched == 0 && g.Name != nil:
			errs = append(errs, fmt.Errorf("gate %s: %q matches no benchmark compared in %s", g.Expr, g.Name, g.Unit))
		case matched == 0:
			errs = append(errs, fmt.Errorf("gate %s: no benchmark is compared in %s on both sides", g.Expr, g.Unit))
		}
	}
	return errors.Join(errs...)
}

func decide(g Gate, t Table, r Row) Decision {
	d := Decision{
		Gate: g.Expr, Benchmark: r.Name, Config: t.Config, Unit: t.Unit,
		Old: r.Old.Center, New: r.New.Center,
		Relative: g.Relative,
		P:        r.Delta.P, N1: r.Delta.N1, N2: r.Delta.N2,
		Significant: r.Delta.Significant,
	}
	d.Change = r.Delta.Absolute
	if g.Relative {
		d.Change = r.Delta.Relative
	}
	d.Beyond = g.beyond(d.Change)
	change := formatChange(d.Change, g.Relative, t.Unit)
	stat := statString(r.Delta)
	switch {
	case d.Beyond && d.Significant:
		d.Outcome = Fail
		d.Reason = fmt.Sprintf("%s %s is beyond %s and significant (%s)", t.Unit, change, g.display, stat)
	case d.Beyond:
		d.Outcome = Warn
		d.Reason = fmt.Sprintf("%s %s is beyond %s but not significant (%s): more runs would decide", t.Unit, change, g.display, stat)
	case d.Significant:
		d.Outcome = Pass
		d.Reason = fmt.Sprintf("%s %s is within %s (%s)", t.Unit, change, g.display, stat)
	default:
		d.Outcome = Pass
		d.Reason = fmt.Sprintf("%s %s is within %s and not significant (%s)", t.Unit, change, g.display, stat)
	}
	return d
}

// formatChange writes a relative change as a signed percentage and an
// absolute one scaled in its unit.
func formatChange(v float64, relative bool, unit string) string {
	if relative {
		if math.IsInf(v, 0) {
			return map[bool]string{true: "+∞%", false: "-∞%"}[v > 0]
		}
		return fmt.Sprintf("%+.2f%%", v*100)
	}
	s := benchunit.Scale(math.Abs(v), benchunit.ClassOf(unit))
	if v < 0 {
		return "-" + s + " " + unit
	}
	return "+" + s + " " + unit
}

// statString is benchstat's "(p=0.000 n=10)" without the parentheses.
func statString(d *Delta) string {
	var s string
	if d.P != 0 {
		s = fmt.Sprintf("p=%0.3f ", d.P)
	}
	if d.N1 == d.N2 {
		return s + fmt.Sprintf("n=%d", d.N1)
	}
	return s + fmt.Sprintf("n=%d+%d", d.N1, d.N2)
}

// units lists the tables' units in order, once each.
func (r *Report) units() []string {
	var out []string
	for _, t := range r.Tables {
		out = appendUnique(out, t.Unit)
	}
	return out
}

func containsErr(errs []error, e error) bool {
	for _, x := range errs {
		if x.Error() == e.Error() {
			return true
		}
	}
	return false
}
