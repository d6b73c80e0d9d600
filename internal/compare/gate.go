package compare

import (
	"fmt"
	"math"
	"strings"

	"github.com/heapscope/heapscope/internal/gate"
	"github.com/heapscope/heapscope/internal/result"
)

// GateSyntax is the accepted form of a compare gate.
const GateSyntax = `[FUNCTION_REGEX:]FIGURE>THRESHOLD or FIGURE<THRESHOLD, FIGURE a headline figure's JSON name, ` +
	`THRESHOLD relative (+5%) or absolute in the figure's unit; ` +
	`for example 'bytes_per_request>+5%', 'gc_pause_p99_seconds>0.002', 'throughput_per_second<-10%', 'Process:bytes_per_request>+0%'`

// ParseGate parses a gate on a comparison: a gate.Gate whose unit is a
// headline figure's JSON name. A FUNCTION_REGEX before a colon selects
// allocation sites by function and gates the sum of their
// bytes_per_request or objects_per_request (per second without load).
func ParseGate(expr string) (gate.Gate, error) {
	g, err := gate.Parse(expr)
	if err != nil {
		return gate.Gate{}, fmt.Errorf("%w; want %s", err, GateSyntax)
	}
	if _, ok := result.FigureByName(g.Unit); !ok {
		return gate.Gate{}, fmt.Errorf("gate %q: %q is not a headline figure; choose one of %s", expr, g.Unit, strings.Join(result.FigureNames(), ", "))
	}
	if g.Name != nil && g.Unit != "bytes_per_request" && g.Unit != "objects_per_request" {
		return gate.Gate{}, fmt.Errorf("gate %q: a function selects allocation sites, so it gates bytes_per_request or objects_per_request, not %s", expr, g.Unit)
	}
	return g, nil
}

// evaluate applies the gates. A gate on a figure one side lacks is an
// error: a gate that checks nothing must not pass silently.
func (c *Comparison) evaluate(gates []gate.Gate, before, after Side, sites *siteTable) error {
	for _, g := range gates {
		var d Decision
		if g.Name != nil {
			var err error
			if d, err = c.siteDecision(g, sites); err != nil {
				return err
			}
		} else {
			f, ok := c.Figure(g.Unit)
			if !ok {
				return fmt.Errorf("gate %s: %q is not a headline figure; choose one of %s", g.Expr, g.Unit, strings.Join(result.FigureNames(), ", "))
			}
			if !f.Compared() {
				return fmt.Errorf("gate %s: %s is missing %s, so the gate cannot decide", g.Expr, f.Name, missingSide(f))
			}
			d = Decision{Gate: g.Expr, Figure: f.Name, Before: f.Before.Median, After: f.After.Median, Test: f.Test}
		}
		c.decide(g, &d)
		c.Decisions = append(c.Decisions, d)
	}
	return nil
}

func missingSide(f FigureChange) string {
	switch {
	case f.Before == nil && f.After == nil:
		return "on both sides"
	case f.Before == nil:
		return "before"
	}
	return "after"
}

// siteDecision sums, per run, the sites whose function the gate selects.
func (c *Comparison) siteDecision(g gate.Gate, t *siteTable) (Decision, error) {
	if t == nil || t.runs[0] == 0 || t.runs[1] == 0 {
		return Decision{}, fmt.Errorf("gate %s: a side has no allocs-delta profile, so sites cannot be gated", g.Expr)
	}
	var sums [2][]float64
	matched := 0
	for side := range 2 {
		sums[side] = make([]float64, t.runs[side])
	}
	for _, k := range t.keys {
		if !g.Name.MatchString(k.function) {
			continue
		}
		matched++
		v := t.values[k]
		for side := range 2 {
			vals := v.bytes[side]
			if g.Unit == "objects_per_request" {
				vals = v.objects[side]
			}
			for i, x := range vals {
				sums[side][i] += x
			}
		}
	}
	if matched == 0 {
		return Decision{}, fmt.Errorf("gate %s: %q matches no function of the allocation sites", g.Expr, g.Name)
	}
	d := Decision{Gate: g.Expr, Figure: g.Unit, Before: stat(sums[0]).Median, After: stat(sums[1]).Median}
	if c.Tested {
		d.Test = c.test(sums[0], sums[1])
	}
	return d, nil
}

// decide fills the change, whether it is beyond the threshold, and the
// outcome: with repeated runs a change fails only when it is also
// significant (otherwise it warns); with one run per side, being beyond
// the threshold fails.
func (c *Comparison) decide(g gate.Gate, d *Decision) {
	d.Relative = g.Relative
	abs, rel := change(d.Before, d.After)
	ch := abs
	if g.Relative {
		switch {
		case rel != nil:
			ch = *rel
		case d.After > 0:
			ch = math.Inf(1)
		case d.After < 0:
			ch = math.Inf(-1)
		}
	}
	if !math.IsInf(ch, 0) {
		d.Change = &ch
	}
	d.Beyond = g.Beyond(ch)
	what := d.Figure
	if g.Name != nil {
		what = fmt.Sprintf("%s of %s", d.Figure, g.Name)
	}
	shown := formatChange(ch, g.Relative)
	stat := "one run per side, no significance test"
	if d.Test != nil {
		stat = fmt.Sprintf("p=%.3f n=%d+%d", d.Test.P, d.Test.N1, d.Test.N2)
	}
	significant := d.Test == nil || d.Test.Significant
	switch {
	case d.Beyond && significant:
		d.Outcome = gate.Fail
		if d.Test != nil {
			d.Reason = fmt.Sprintf("%s %s is beyond %s and significant (%s)", what, shown, g.Display(), stat)
		} else {
			d.Reason = fmt.Sprintf("%s %s is beyond %s (%s)", what, shown, g.Display(), stat)
		}
	case d.Beyond:
		d.Outcome = gate.Warn
		d.Reason = fmt.Sprintf("%s %s is beyond %s but not significant (%s): more runs would decide", what, shown, g.Display(), stat)
	default:
		d.Outcome = gate.Pass
		d.Reason = fmt.Sprintf("%s %s is within %s (%s)", what, shown, g.Display(), stat)
	}
}

func formatChange(v float64, relative bool) string {
	switch {
	case relative && math.IsInf(v, 1):
		return "+∞%"
	case relative && math.IsInf(v, -1):
		return "-∞%"
	case relative:
		return fmt.Sprintf("%+.2f%%", v*100)
	}
	return fmt.Sprintf("%+.4g", v)
}
