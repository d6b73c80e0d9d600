// Package gate holds the vocabulary of thresholds on changes: a Gate,
// written [NAME_REGEX:]UNIT>THRESHOLD or with <, and the Outcome it
// decides, pass, warn or fail. bench gates benchmarks' units with it
// (B/op, sec/op) and compare gates runs' headline figures
// (bytes_per_request); report words the outcomes the same way for both.
//
// It is pure and imports no other package of heapscope, so that bench,
// compare and report can share it without importing one another.
package gate

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/perf/benchunit"
)

// Gate fails a change beyond a threshold. It is written
// [NAME_REGEX:]UNIT>THRESHOLD, or with < for units where lower is worse:
//
//	B/op>+5%                  the unit grows by more than 5 %
//	Process.*:allocs/op>+0%   any growth in what matches Process.*
//	ns/op>50                  growth by more than 50 ns
//	MB/s<-5%                  a fall by more than 5 %
//
// A threshold without a sign points the way of the operator (> +T, < -T).
// The unit is tidied as benchstat tidies units, so ns/op reads sec/op
// and an absolute threshold is converted with it (50 ns/op is 5e-8
// sec/op); units benchstat does not know are kept as written. What the
// name selects is the caller's to say: benchmarks for bench, allocation
// sites' functions for compare.
type Gate struct {
	// Expr is the gate as written.
	Expr string
	// Name selects what the gate applies to; nil selects everything.
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

// Parse parses a gate expression. Its errors say what is wrong with the
// expression, not what the caller accepts: callers add their syntax.
func Parse(expr string) (Gate, error) {
	s := strings.TrimSpace(expr)
	bad := func(why string) (Gate, error) {
		return Gate{}, fmt.Errorf("gate %q: %s", expr, why)
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

// Display returns the threshold as written with its sign made explicit,
// such as "+5%".
func (g Gate) Display() string { return g.display }

// Matches reports whether the gate selects name: it has no name, or its
// name is found, unanchored, in name.
func (g Gate) Matches(name string) bool {
	return g.Name == nil || g.Name.MatchString(name)
}

// Beyond reports whether a change, relative (a fraction) or absolute as
// the threshold, is strictly beyond the threshold in the gate's
// direction: a change equal to it up to rounding (105/100−1 is
// 0.050000000000000044) is not beyond.
func (g Gate) Beyond(change float64) bool {
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

// Outcome is what a gate decided for one change. Its value is the word
// JSON documents carry.
type Outcome string

// The outcomes of a gate.
const (
	// Pass: the change is within the threshold (significant or not).
	Pass Outcome = "pass"
	// Warn: the change is beyond the threshold but not significant; more
	// runs would decide.
	Warn Outcome = "warn"
	// Fail: the change is beyond the threshold and significant (or there
	// is no test of significance to ask).
	Fail Outcome = "fail"
)

// ParseAll parses each expression with parse; an error names the flag
// (or setting) the expressions came from.
func ParseAll(flag string, exprs []string, parse func(string) (Gate, error)) ([]Gate, error) {
	var gates []Gate
	for _, expr := range exprs {
		g, err := parse(expr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		gates = append(gates, g)
	}
	return gates, nil
}
