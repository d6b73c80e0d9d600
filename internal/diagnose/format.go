package diagnose

import (
	"fmt"
	"math"
	"strings"

	"github.com/heapscope/heapscope/internal/result"
)

// The words of titles and fixes. report formats the same figures for the
// tables; these stay here so that analysis does not depend on rendering.

func fmtBytes(n float64) string {
	neg := n < 0
	n = math.Abs(n)
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	s := fmt.Sprintf("%.1f %s", n, units[i])
	if i == 0 || n >= 100 {
		s = fmt.Sprintf("%.0f %s", n, units[i])
	}
	if neg {
		return "-" + s
	}
	return s
}

func fmtCount(n float64) string {
	a := math.Abs(n)
	switch {
	case a >= 1e6:
		return fmt.Sprintf("%.1fM", n/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.1fk", n/1e3)
	case a == math.Trunc(a):
		return fmt.Sprintf("%.0f", n)
	default:
		return fmt.Sprintf("%.1f", n)
	}
}

func fmtPercent(share float64) string {
	if share != 0 && math.Abs(share) < 0.01 {
		return fmt.Sprintf("%.2f%%", share*100)
	}
	return fmt.Sprintf("%.1f%%", share*100)
}

func fmtSeconds(s float64) string {
	switch {
	case s < 1e-3:
		return fmt.Sprintf("%.0fµs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.1fms", s*1e3)
	default:
		return fmt.Sprintf("%.1fs", s)
	}
}

// shortFunction drops the import path, keeping the package's last
// element.
func shortFunction(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// shortFile keeps the last two elements of a path.
func shortFile(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return path
	}
	j := strings.LastIndexByte(path[:i], '/')
	return path[j+1:]
}

// where names a site for a title: "leakycache.(*Worker).Process
// (leakycache/leakycache.go:38)".
func (s site) where() string {
	if s.function == "" {
		return "an unknown site"
	}
	if s.file == "" {
		return shortFunction(s.function)
	}
	return fmt.Sprintf("%s (%s:%d)", shortFunction(s.function), shortFile(s.file), s.line)
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
