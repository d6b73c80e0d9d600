package diagnose

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/heapscope/heapscope/internal/result"
)

// Severity ranks findings: Info < Low < Medium < High.
type Severity int

// The severities, in increasing order.
const (
	Info Severity = iota
	Low
	Medium
	High
)

// String returns the severity as result.json spells it.
func (s Severity) String() string {
	switch s {
	case Low:
		return "low"
	case Medium:
		return "medium"
	case High:
		return "high"
	default:
		return "info"
	}
}

// AndAbove returns the names of s and every severity above it, as
// result.json spells them.
func (s Severity) AndAbove() []string {
	var names []string
	for x := s; x <= High; x++ {
		names = append(names, x.String())
	}
	return names
}

// ParseSeverity reads a severity name: info, low, medium or high.
func ParseSeverity(name string) (Severity, error) {
	for s := Info; s <= High; s++ {
		if s.String() == name {
			return s, nil
		}
	}
	return Info, fmt.Errorf("severity %q: choose info, low, medium or high", name)
}

// SeverityOf returns the severity of a finding; an unknown name is Info.
func SeverityOf(f result.Finding) Severity {
	s, _ := ParseSeverity(f.Severity)
	return s
}

// CountAtLeast returns how many findings have severity min or above.
func CountAtLeast(findings []result.Finding, min Severity) int {
	n := 0
	for _, f := range findings {
		if SeverityOf(f) >= min {
			n++
		}
	}
	return n
}

// AtLeast reports whether any finding has severity min or above.
func AtLeast(findings []result.Finding, min Severity) bool {
	for _, f := range findings {
		if SeverityOf(f) >= min {
			return true
		}
	}
	return false
}

// Sort orders findings for people: by severity, most severe first, then
// by confidence, then by id, file and line, so the order is stable.
func Sort(findings []result.Finding) {
	slices.SortStableFunc(findings, func(a, b result.Finding) int {
		if c := cmp.Compare(SeverityOf(b), SeverityOf(a)); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Confidence, a.Confidence); c != 0 {
			return c
		}
		if c := cmp.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		if c := cmp.Compare(a.File, b.File); c != 0 {
			return c
		}
		return cmp.Compare(a.Line, b.Line)
	})
}

// level returns the severity a value reaches against three increasing
// thresholds (low, medium, high); Info below low. A zero threshold is
// never reached.
func level(v, low, medium, high float64) Severity {
	switch {
	case high > 0 && v >= high:
		return High
	case medium > 0 && v >= medium:
		return Medium
	case low > 0 && v >= low:
		return Low
	default:
		return Info
	}
}

// levelWithin returns the severity of a figure that worsens as it falls,
// such as the time or the headroom left before a limit: High at or below
// high, Medium at or below medium, Info above both.
func levelWithin(v, high, medium float64) Severity {
	switch {
	case v <= high:
		return High
	case v <= medium:
		return Medium
	}
	return Info
}

// Levels are the three thresholds of a figure at which a finding becomes
// low, medium and high.
type Levels struct {
	Low    float64 `yaml:"low"`
	Medium float64 `yaml:"medium"`
	High   float64 `yaml:"high"`
}

// of returns the severity v reaches.
func (l Levels) of(v float64) Severity { return level(v, l.Low, l.Medium, l.High) }

func (l Levels) validate(name string) error {
	if l.Low < 0 || l.Medium < 0 || l.High < 0 {
		return fmt.Errorf("%s: levels must not be negative (low %g, medium %g, high %g)", name, l.Low, l.Medium, l.High)
	}
	if !(l.Low <= l.Medium && l.Medium <= l.High) {
		return fmt.Errorf("%s: levels must increase: low %g ≤ medium %g ≤ high %g", name, l.Low, l.Medium, l.High)
	}
	return nil
}
