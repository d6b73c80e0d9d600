package report

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/result"
)

// Findings are the findings of a diagnosis (heapscope diagnose), already
// in order, most severe first, with the notes on what could not be
// checked: in text, Markdown or JSON ({"findings": […], "notes": […]}).
type Findings struct {
	Findings []result.Finding `json:"findings"`
	Notes    []string         `json:"notes,omitempty"`
}

// Formats lists Findings' formats.
func (Findings) Formats() []Format { return textFormats }

func (d Findings) data() any { return d }

func (d Findings) render(w io.Writer, f Format) error {
	var b strings.Builder
	if f == FormatMarkdown {
		findingsMarkdown(&b, d.Findings, d.Notes)
	} else {
		findingsText(&b, d.Findings, d.Notes)
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
		for _, s := range f.Symptoms {
			fmt.Fprintf(b, "         symptom (%s): %s\n", s.Severity, s.Title)
		}
	}
	for _, n := range notes {
		fmt.Fprintf(b, "  note: %s\n", n)
	}
}

// briefInfo is how many info findings the terminal summary lists by title
// when there is nothing more severe; otherwise it only counts them.
const briefInfo = 3

// findingsBrief is the terminal summary's view of the findings: medium and
// high ones with their fix, low ones by title, info ones counted (or a few
// listed when nothing is more severe). Evidence, every fix and the notes
// are in report.md and in "heapscope diagnose".
func findingsBrief(b *strings.Builder, findings []result.Finding, notes []string, hidden int, dir string) {
	if len(findings) == 0 {
		b.WriteString("Findings: none\n")
	} else {
		fmt.Fprintf(b, "Findings (%s):\n", severityCounts(findings))
	}
	// A site can draw several findings (its growth, and the pattern the
	// line shows): the first, most severe, is shown; the others are named
	// under it.
	// The fix shown is the most specific one, a known pattern's, unless
	// it is of a lesser severity: a low pattern's advice does not hide a
	// high leak's fix at the same line.
	also := make(map[string][]string)
	fixes := make(map[string]result.Finding)
	for _, f := range findings {
		if k := siteKey(f); k != "" && f.Severity != "info" {
			also[k] = append(also[k], f.ID)
			cur, ok := fixes[k]
			if !ok || strings.HasPrefix(f.ID, "pattern.") && severityRank[f.Severity] >= severityRank[cur.Severity] {
				fixes[k] = f
			}
		}
	}
	shown := make(map[string]bool)
	var info []result.Finding
	for _, f := range findings {
		k := siteKey(f)
		if f.Severity == "info" {
			info = append(info, f)
			continue
		}
		if k != "" && shown[k] {
			continue
		}
		shown[k] = k != ""
		fmt.Fprintf(b, "  %-6s %s\n", strings.ToUpper(f.Severity), f.Title)
		if ids := also[k]; k != "" && len(ids) > 1 {
			fmt.Fprintf(b, "         also at this line: %s\n", strings.Join(ids[1:], ", "))
		}
		fix := f.Fix
		if k != "" {
			fix = fixes[k].Fix
		}
		if fix != "" && (f.Severity == "high" || f.Severity == "medium") {
			fmt.Fprintf(b, "         fix: %s\n", firstSentence(fix))
		}
	}
	if len(info) > 0 && len(info) < len(findings) {
		fmt.Fprintf(b, "  and %d info finding%s\n", len(info), plural(len(info)))
	} else {
		for i, f := range info {
			if i == briefInfo {
				fmt.Fprintf(b, "  and %d more\n", len(info)-briefInfo)
				break
			}
			fmt.Fprintf(b, "  %-6s %s\n", "INFO", f.Title)
		}
	}
	if hidden > 0 {
		fmt.Fprintf(b, "  and %d small hot spot%s: --all\n", hidden, plural(hidden))
	}
	if len(notes) > 0 {
		fmt.Fprintf(b, "  %d note%s on what the checks saw or could not check\n", len(notes), plural(len(notes)))
	}
	if len(findings) > 0 || len(notes) > 0 {
		where := "heapscope diagnose RUN_DIR"
		if dir != "" {
			where = "heapscope diagnose " + dir
		}
		fmt.Fprintf(b, "  evidence and fixes: report.md, or %s\n", where)
	}
}

// siteKey names a finding's source line, or "" when it has none.
func siteKey(f result.Finding) string {
	if f.File == "" || f.Line <= 0 {
		return ""
	}
	return f.File + ":" + strconv.FormatInt(f.Line, 10)
}

// severityCounts says how many findings there are of each severity, most
// severe first: "2 high, 1 low".
func severityCounts(findings []result.Finding) string {
	var parts []string
	for _, sev := range []string{"high", "medium", "low", "info"} {
		n := 0
		for _, f := range findings {
			if f.Severity == sev {
				n++
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, sev))
		}
	}
	return strings.Join(parts, ", ")
}

// firstSentence cuts a fix to its first sentence or clause (up to ". " or
// "; "), for the terminal summary.
func firstSentence(s string) string {
	cut := len(s)
	for _, sep := range []string{". ", "; "} {
		if i := strings.Index(s, sep); i > 0 && i < cut {
			cut = i
		}
	}
	return s[:cut]
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
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
			fmt.Fprintf(b, ", at `%s`", humanize.Location(f.File, f.Line))
		}
		b.WriteString(".\n\n")
		if len(f.Evidence) > 0 {
			b.WriteString("| evidence | value |\n|---|---:|\n")
			for _, k := range slices.Sorted(maps.Keys(f.Evidence)) {
				fmt.Fprintf(b, "| %s | %s |\n", k, EvidenceValue(k, f.Evidence[k]))
			}
			b.WriteString("\n")
		}
		if f.Fix != "" {
			fmt.Fprintf(b, "**Fix:** %s\n\n", f.Fix)
		}
		if len(f.Symptoms) > 0 {
			b.WriteString("Symptoms of the same cause:\n\n")
			for _, s := range f.Symptoms {
				fmt.Fprintf(b, "- %s: %s (`%s`)\n", s.Severity, humanize.MarkdownText(s.Title), s.ID)
			}
			b.WriteString("\n")
		}
		for _, e := range f.Escape {
			fmt.Fprintf(b, "- escape analysis: `%s`\n", e)
		}
		if len(f.Escape) > 0 {
			b.WriteString("\n")
		}
	}
	if len(notes) > 0 {
		b.WriteString("Notes on the checks:\n\n")
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
		parts = append(parts, k+" "+EvidenceValue(k, ev[k]))
	}
	return strings.Join(parts, ", ")
}

// EvidenceValue formats a number of a finding's evidence by the unit its
// key ends in, as internal/diagnose names them: _bytes, _seconds, _share,
// a rate (_per_second, _per_minute, _per_request, also after bytes_ or
// seconds_: bytes_per_second), hours_ for a span, r2 for a fit. Other
// keys are counts (goroutines, samples, snapshots, contentions) or plain
// figures.
func EvidenceValue(key string, v float64) string {
	unit, per := key, ""
	for _, p := range []struct{ suffix, per string }{
		{"_per_second", "/s"}, {"_per_minute", "/min"}, {"_per_request", "/request"},
	} {
		if i := strings.Index(key, p.suffix); i >= 0 {
			unit, per = key[:i], p.per
			break
		}
	}
	switch {
	case strings.HasSuffix(unit, "bytes"):
		return humanize.Bytes(v) + per
	case strings.HasSuffix(unit, "seconds"):
		return humanize.Seconds(v) + per
	case per == "/s":
		return humanize.Rate(v)
	case per != "":
		return humanize.Count(v) + per
	case strings.Contains(key, "share"):
		return humanize.Percent(v)
	case strings.HasPrefix(key, "hours_"):
		return humanize.Hours(v)
	case key == "r2" || strings.HasSuffix(key, "_r2"):
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v == math.Trunc(v):
		return humanize.Count(v)
	}
	if a := math.Abs(v); a >= 1000 || a < 1e-4 {
		return humanize.Number(v) // never an exponent
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// severityRank orders severities, least first.
var severityRank = map[string]int{"info": 0, "low": 1, "medium": 2, "high": 3}
