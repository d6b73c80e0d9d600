package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/heapscope/heapscope/internal/result"
)

// Findings writes findings (already in order, most severe first) and the
// notes on what could not be checked, in text or Markdown. JSON is the
// caller's: the findings are result.json's.
func Findings(w io.Writer, findings []result.Finding, notes []string, format Format) error {
	var b strings.Builder
	if format == FormatMarkdown {
		findingsMarkdown(&b, findings, notes)
	} else {
		findingsText(&b, findings, notes)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func findingsText(b *strings.Builder, findings []result.Finding, notes []string) {
	if len(findings) == 0 {
		b.WriteString("Findings: none\n")
	} else {
		fmt.Fprintf(b, "Findings (%d):\n", len(findings))
	}
	for _, f := range findings {
		fmt.Fprintf(b, "  %-6s %s\n", strings.ToUpper(f.Severity), f.Title)
		fmt.Fprintf(b, "         id %s, confidence %.2f; %s\n", f.ID, f.Confidence, evidenceLine(f.Evidence))
		if f.Fix != "" {
			fmt.Fprintf(b, "         fix: %s\n", f.Fix)
		}
		for _, e := range f.Escape {
			fmt.Fprintf(b, "         escape: %s\n", e)
		}
	}
	for _, n := range notes {
		fmt.Fprintf(b, "  note: %s\n", n)
	}
}

func findingsMarkdown(b *strings.Builder, findings []result.Finding, notes []string) {
	b.WriteString("## Findings\n\n")
	if len(findings) == 0 {
		b.WriteString("None.\n\n")
	}
	for _, f := range findings {
		fmt.Fprintf(b, "### %s: %s\n\n", strings.ToUpper(f.Severity), f.Title)
		fmt.Fprintf(b, "`%s`, confidence %.2f", f.ID, f.Confidence)
		if f.File != "" {
			fmt.Fprintf(b, ", at `%s`", Location(f.File, f.Line))
		}
		b.WriteString(".\n\n")
		if len(f.Evidence) > 0 {
			b.WriteString("| evidence | value |\n|---|---:|\n")
			for _, k := range slices.Sorted(maps.Keys(f.Evidence)) {
				fmt.Fprintf(b, "| %s | %s |\n", k, evidenceValue(k, f.Evidence[k]))
			}
			b.WriteString("\n")
		}
		if f.Fix != "" {
			fmt.Fprintf(b, "**Fix:** %s\n\n", f.Fix)
		}
		for _, e := range f.Escape {
			fmt.Fprintf(b, "- escape analysis: `%s`\n", e)
		}
		if len(f.Escape) > 0 {
			b.WriteString("\n")
		}
	}
	if len(notes) > 0 {
		b.WriteString("Not checked:\n\n")
		for _, n := range notes {
			fmt.Fprintf(b, "- %s\n", n)
		}
		b.WriteString("\n")
	}
}

// evidenceLine shows a finding's numbers on one line, in key order.
func evidenceLine(ev map[string]float64) string {
	parts := make([]string, 0, len(ev))
	for _, k := range slices.Sorted(maps.Keys(ev)) {
		parts = append(parts, k+" "+evidenceValue(k, ev[k]))
	}
	return strings.Join(parts, ", ")
}

// evidenceValue formats a number by what its name says it is.
func evidenceValue(key string, v float64) string {
	switch {
	case strings.HasSuffix(key, "_bytes") || strings.Contains(key, "bytes_per"):
		s := Bytes(v)
		if i := strings.Index(key, "bytes_per_"); i >= 0 {
			s += "/" + strings.TrimPrefix(key[i+len("bytes_per_"):], "")
		}
		return s
	case strings.HasSuffix(key, "_share") || strings.HasPrefix(key, "share"):
		return Percent(v)
	case strings.HasSuffix(key, "_seconds"):
		return Seconds(v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}
