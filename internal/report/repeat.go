package report

import (
	"fmt"
	"html"
	"io"
	"path/filepath"
	"strings"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/result"
)

// repeatSummary is Summary for a run recorded as several windows: each
// headline figure's median and range over the windows, and the windows'
// statuses.
func repeatSummary(w io.Writer, r *result.Run, dir string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "heapscope profiled %s over %d windows (%s)\n", r.Target.URL, len(r.Repeat.Windows), r.Status)
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "  not collected: %s: %s\n", f.Step, f.Error)
	}
	b.WriteString("\n")
	// The findings are the windows': diagnose reads one window at a time.
	window := ""
	for _, win := range r.Repeat.Windows {
		if dir != "" && win.Status != result.StatusFailed {
			window = filepath.Join(dir, filepath.FromSlash(win.Path))
			break
		}
	}
	findingsBrief(&b, r.Findings, r.DiagnosisNotes, r.HiddenHotSpots, window)
	b.WriteString("\nHeadline figures over the windows:\n")
	tw := plainTable()
	rightAlign(tw, 2, 4)
	tw.AppendHeader([]any{"", "median", "min", "max"})
	for _, f := range result.Figures {
		s, ok := r.Repeat.Figures[f.Name]
		if !ok {
			continue
		}
		tw.AppendRow([]any{f.Label, FigureValue(s.Median, f.Unit), FigureValue(s.Min, f.Unit), FigureValue(s.Max, f.Unit)})
	}
	b.WriteString(indent(tw.Render(), "  "))
	writeWarnings(&b, r.Warnings)
	if dir != "" {
		fmt.Fprintf(&b, "\nWindows: %s (each a run: compare them with heapscope compare)\n", filepath.Join(dir, result.WindowsDir))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// repeatMarkdown is Markdown for a run recorded as several windows.
func repeatMarkdown(w io.Writer, r *result.Run) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# heapscope run: %s, %d windows\n\n", r.Target.URL, r.Repeat.Count)
	fmt.Fprintf(&b, "Status: %s. Window %s – %s. Each window is a run of its own under `%s/`; the table gives each headline figure's median over the windows that have it, and its range.\n\n",
		r.Status, r.Window.Start.Format("2006-01-02 15:04:05.000Z"), r.Window.End.Format("15:04:05.000Z"), result.WindowsDir)
	b.WriteString("| figure | median | min | max | windows |\n|:--|--:|--:|--:|--:|\n")
	for _, f := range result.Figures {
		s, ok := r.Repeat.Figures[f.Name]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "| %s (`%s`) | %s | %s | %s | %d |\n", f.Label, f.Name, FigureValue(s.Median, f.Unit), FigureValue(s.Min, f.Unit), FigureValue(s.Max, f.Unit), s.N)
	}
	b.WriteString("\n| window | status | |\n|:--|:--|:--|\n")
	for _, win := range r.Repeat.Windows {
		fmt.Fprintf(&b, "| [%s](%s/report.md) | %s | %s |\n", win.Path, win.Path, win.Status, humanize.MarkdownText(win.Error))
	}
	if len(r.Findings) > 0 {
		b.WriteString("\n## Findings in any window\n\n")
		for _, f := range r.Findings {
			fmt.Fprintf(&b, "- **%s** `%s`: %s%s\n", f.Severity, f.ID, humanize.MarkdownText(f.Title), findingSite(f, humanize.MarkdownCode))
		}
	}
	writeMarkdownWarnings(&b, "## Warnings", r.Warnings)
	_, err := io.WriteString(w, b.String())
	return err
}

// repeatHTML is HTML for a run recorded as several windows: the headline
// figures over the windows, each window with a link to its own report,
// the findings of any window, and the flame graphs given (the windows'
// allocations merged).
func repeatHTML(w io.Writer, r *result.Run, flames []HTMLFlame, files string) error {
	var b strings.Builder
	e := html.EscapeString
	if err := writeHTMLHead(&b, r, "Figures", "Windows", "Findings", "Flame graphs"); err != nil {
		return err
	}
	b.WriteString("<section id=\"figures\">\n<h2>Headline figures over the windows</h2>\n<table class=\"sites\">\n<tr><th>figure</th><th>median</th><th>min</th><th>max</th><th>windows</th></tr>\n")
	for _, f := range result.Figures {
		s, ok := r.Repeat.Figures[f.Name]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "<tr><td title=\"%s\">%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td></tr>\n", e(f.Name), e(f.Label),
			e(FigureValue(s.Median, f.Unit)), e(FigureValue(s.Min, f.Unit)), e(FigureValue(s.Max, f.Unit)), s.N)
	}
	b.WriteString("</table>\n</section>\n")
	b.WriteString("<section id=\"windows\">\n<h2>Windows</h2>\n<p class=\"note\">Each window is a run of its own; <code>heapscope compare</code> reads them as samples.</p>\n<table class=\"files\">\n<tr><th>window</th><th>status</th><th></th></tr>\n")
	for _, win := range r.Repeat.Windows {
		fmt.Fprintf(&b, "<tr><td><a href=\"%s/report.html\">%s</a></td><td>%s</td><td>%s</td></tr>\n", e(files+win.Path), e(win.Path), e(string(win.Status)), e(win.Error))
	}
	b.WriteString("</table>\n</section>\n")
	writeFindings(&b, r.Findings, r.DiagnosisNotes)
	writeFlames(&b, flames, files)
	b.WriteString("</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
