package diagnose

import (
	"fmt"
	"math"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/result"
)

// where names a site for a title: "leakycache.(*Worker).Process
// (leakycache/leakycache.go:38)".
func (s site) where() string {
	if s.function == "" {
		return "an unknown site"
	}
	if s.file == "" {
		return humanize.ShortFunction(s.function)
	}
	return fmt.Sprintf("%s (%s:%d)", humanize.ShortFunction(s.function), humanize.ShortFile(s.file), s.line)
}

// newFinding builds a finding at a site. Evidence values that are not
// finite are dropped: JSON cannot carry them.
func newFinding(id string, sev Severity, at site, title string, evidence map[string]float64, fix string, confidence float64) result.Finding {
	for k, v := range evidence {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			delete(evidence, k)
		}
	}
	return result.Finding{
		ID:         id,
		Severity:   sev.String(),
		Title:      title,
		Function:   at.function,
		File:       at.file,
		Line:       at.line,
		Evidence:   evidence,
		Fix:        fix,
		Confidence: math.Round(min(max(confidence, 0), 1)*100) / 100,
	}
}
