package bench

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"golang.org/x/perf/benchunit"

	"github.com/heapscope/heapscope/internal/gate"
)

// GateSyntax is the accepted form of a gate, for messages and help.
const GateSyntax = `[NAME_REGEX:]UNIT>THRESHOLD or [NAME_REGEX:]UNIT<THRESHOLD, ` +
	`THRESHOLD a relative change such as +5% or an absolute one in the unit such as 100; ` +
	`for example 'B/op>+5%', 'Process.*:allocs/op>+0%', 'sec/op>+10%', 'ns/op>50', 'B/s<-5%'`

// ParseGate parses a gate on benchmarks (see gate.Gate): its NAME_REGEX
// is searched for, unanchored, in the full benchmark name as the table
// shows it (Worker_Process-2) and in the name with its Benchmark prefix.
// Its errors quote the accepted form.
func ParseGate(expr string) (gate.Gate, error) {
	g, err := gate.Parse(expr)
	if err != nil {
		return gate.Gate{}, fmt.Errorf("%w; want %s", err, GateSyntax)
	}
	return g, nil
}

// selects reports whether the gate selects the benchmark named name.
func selects(g gate.Gate, name string) bool {
	return g.Matches(name) || g.Matches("Benchmark"+name)
}

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
	Outcome             gate.Outcome
	// Reason says why, in a sentence: "B/op +38.20% is beyond +5% and
	// significant (p=0.000 n=10)".
	Reason string
}

// evaluate applies the gates to every row they select. A gate whose unit
// no benchmark reports, or whose name selects no benchmark compared on both
// sides, is an error: a gate that checks nothing must not pass silently.
func evaluate(rep *Report, gates []gate.Gate) error {
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
				if r.Delta == nil || !selects(g, r.Name) {
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

func decide(g gate.Gate, t Table, r Row) Decision {
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
	d.Beyond = g.Beyond(d.Change)
	change := formatChange(d.Change, g.Relative, t.Unit)
	stat := r.Delta.Stat()
	switch {
	case d.Beyond && d.Significant:
		d.Outcome = gate.Fail
		d.Reason = fmt.Sprintf("%s %s is beyond %s and significant (%s)", t.Unit, change, g.Display(), stat)
	case d.Beyond:
		d.Outcome = gate.Warn
		d.Reason = fmt.Sprintf("%s %s is beyond %s but not significant (%s): more runs would decide", t.Unit, change, g.Display(), stat)
	case d.Significant:
		d.Outcome = gate.Pass
		d.Reason = fmt.Sprintf("%s %s is within %s (%s)", t.Unit, change, g.Display(), stat)
	default:
		d.Outcome = gate.Pass
		d.Reason = fmt.Sprintf("%s %s is within %s and not significant (%s)", t.Unit, change, g.Display(), stat)
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

// Stat is benchstat's "(p=0.000 n=10)" without the parentheses: the
// p-value when there is one, and the runs on each side.
func (d *Delta) Stat() string {
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
