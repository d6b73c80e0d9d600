package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"

	"github.com/heapscope/heapscope/internal/allocbench"
	"github.com/heapscope/heapscope/internal/humanize"
)

// Allocbench is the allocator lab's report (heapscope allocbench): a table
// of every pattern under every toolchain as text, a table of the heap's
// Rss per pattern and toolchain as Markdown, a chart of small panels as
// SVG, both on an HTML page, or the report with its runs as JSON (what
// allocbench --from reads back).
type Allocbench struct {
	Report *allocbench.Report
}

// Formats lists Allocbench's formats.
func (Allocbench) Formats() []Format {
	return []Format{FormatText, FormatJSON, FormatMarkdown, FormatSVG, FormatHTML}
}

func (d Allocbench) data() any { return d.Report }

func (d Allocbench) render(w io.Writer, f Format) error {
	switch f {
	case FormatMarkdown:
		return allocbenchMarkdown(w, d.Report)
	case FormatSVG:
		return allocbenchSVG(w, d.Report)
	case FormatHTML:
		return allocbenchHTML(w, d.Report)
	}
	return allocbenchText(w, d.Report)
}

// allocbenchText writes the report as a table, one row per pattern and
// toolchain, then the flagged patterns and the warnings.
func allocbenchText(w io.Writer, r *allocbench.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "allocbench: %d patterns × %d toolchains (%s), %s live per pattern\n",
		len(r.Patterns), len(r.Toolchains), toolchainList(r.Toolchains), humanize.Bytes(float64(r.LiveBytes)))
	b.WriteString("sizes are medians of the runs; RSS/heap = Go heap mappings' Rss / HeapAlloc, ± its 95% confidence interval (the range of the runs when they are too few for one)\n\n")
	b.WriteString(allocbenchTable(r))
	writeFlags(&b, r)
	writeWarnings(&b, r.Warnings)
	_, err := io.WriteString(w, b.String())
	return err
}

// allocbenchMarkdown writes the report as a Markdown table, one row per
// pattern and a column per toolchain with the heap's Rss and RSS/heap
// (the median runs), flagged patterns in bold, then the flags: the form
// for a README or a pull request.
func allocbenchMarkdown(w io.Writer, r *allocbench.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d patterns, %s live each, %d runs per cell; each cell: Go heap mappings' Rss, and that Rss per HeapAlloc byte.\n\n",
		len(r.Patterns), humanize.Bytes(float64(r.LiveBytes)), allocbenchMaxRuns(r))
	first := ""
	if len(r.Toolchains) > 0 {
		first = " (" + toolchainList(r.Toolchains[:1]) + ")"
	}
	fmt.Fprintf(&b, "| pattern | HeapAlloc%s |", first)
	for _, t := range r.Toolchains {
		name := t.GoVersion
		if name == "" {
			name = t.Name
		}
		fmt.Fprintf(&b, " %s |", name)
	}
	b.WriteString(" flagged |\n| --- | ---: |")
	for range r.Toolchains {
		b.WriteString(" ---: |")
	}
	b.WriteString(" --- |\n")
	for _, p := range r.Patterns {
		name := p.Name
		if p.Flagged() {
			name = "**" + name + "**"
		}
		heap := "-"
		if len(p.Cells) > 0 && p.Cells[0].Runs > 0 {
			heap = humanize.Bytes(p.Cells[0].HeapAlloc.Median)
		}
		fmt.Fprintf(&b, "| %s | %s |", name, heap)
		for _, c := range p.Cells {
			if c.Runs == 0 {
				b.WriteString(" - |")
				continue
			}
			fmt.Fprintf(&b, " %s, %.2f |", humanize.Bytes(c.HeapRss.Median), c.RSSPerHeapByte.Median)
		}
		flag := ""
		if p.Flagged() {
			flag = flagSummary(&p)
		}
		fmt.Fprintf(&b, " %s |\n", flag)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(&b, "\nwarning: %s\n", warn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maxRuns is the most runs any cell has.
func allocbenchMaxRuns(r *allocbench.Report) int {
	n := 0
	for _, p := range r.Patterns {
		for _, c := range p.Cells {
			n = max(n, c.Runs)
		}
	}
	return n
}

func toolchainList(ts []allocbench.Toolchain) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.GoVersion
		if t.GoVersion == "" {
			names[i] = t.Name
		}
	}
	return strings.Join(names, ", ")
}

func allocbenchHeader() table.Row {
	return table.Row{"pattern", "go", "runs", "HeapAlloc", "HeapInuse", "HeapSys", "HeapReleased", "Sys", "VmRSS", "heap Rss", "RSS/heap", "flag"}
}

// tableRows are the table's rows; mark wraps the flagged cells' ratio.
func allocbenchRows(r *allocbench.Report, mark string) []table.Row {
	var rows []table.Row
	for _, p := range r.Patterns {
		for i, c := range p.Cells {
			name := ""
			if i == 0 {
				name = p.Name
			}
			goVersion := r.Toolchains[i].GoVersion
			if goVersion == "" {
				goVersion = c.Toolchain
			}
			if c.Runs == 0 {
				rows = append(rows, table.Row{name, goVersion, 0, "-", "-", "-", "-", "-", "-", "-", "-", ""})
				continue
			}
			ratio := fmt.Sprintf("%.2f ±%.0f%%", c.RSSPerHeapByte.Median, 100*c.RSSPerHeapByte.Spread())
			flag := cellFlag(&p, c.Toolchain)
			if flag != "" && mark != "" {
				ratio = mark + ratio + mark
			}
			rows = append(rows, table.Row{
				name, goVersion, c.Runs,
				humanize.Bytes(c.HeapAlloc.Median), humanize.Bytes(c.HeapInuse.Median), humanize.Bytes(c.HeapSys.Median),
				humanize.Bytes(c.HeapReleased.Median), humanize.Bytes(c.Sys.Median), humanize.Bytes(c.VmRSS.Median),
				humanize.Bytes(c.HeapRss.Median), ratio, flag,
			})
		}
	}
	return rows
}

// cellFlag says whom a toolchain's cell differs from: "≠ go1.23.12 ×9.9"
// per flag it takes part in, the ratio being this cell's over the other's.
func cellFlag(p *allocbench.PatternResult, toolchain string) string {
	var parts []string
	for _, f := range p.Flags {
		switch toolchain {
		case f.A:
			parts = append(parts, fmt.Sprintf("≠ %s ×%s", f.B, ratioString(1/f.Ratio)))
		case f.B:
			parts = append(parts, fmt.Sprintf("≠ %s ×%s", f.A, ratioString(f.Ratio)))
		}
	}
	return strings.Join(parts, ", ")
}

func ratioString(r float64) string {
	if r >= 10 || r < 0.1 {
		return fmt.Sprintf("%.3g", r)
	}
	return fmt.Sprintf("%.2f", r)
}

func allocbenchTable(r *allocbench.Report) string {
	tw := plainTable()
	tw.Style().Box.PaddingLeft = ""
	tw.Style().Box.PaddingRight = "  "
	tw.AppendHeader(allocbenchHeader())
	tw.AppendRows(allocbenchRows(r, ""))
	return indent(tw.Render(), "")
}

func writeFlags(b *strings.Builder, r *allocbench.Report) {
	n := 0
	for _, p := range r.Patterns {
		if p.Flagged() {
			n++
		}
	}
	fmt.Fprintf(b, "\n%d of %d patterns flagged: RSS per heap byte differs between toolchains (Mann-Whitney p ≤ %g and at least %.0f%% apart)\n",
		n, len(r.Patterns), r.Alpha, 100*r.MinEffect)
	for _, p := range r.Patterns {
		if !p.Flagged() {
			continue
		}
		fmt.Fprintf(b, "  %s: %s\n", p.Name, flagSummary(&p))
	}
}

// flagSummary describes a flagged pattern in one line.
func flagSummary(p *allocbench.PatternResult) string {
	var parts []string
	for _, f := range p.Flags {
		parts = append(parts, fmt.Sprintf("%s/%s ×%s (p=%.3f)", f.B, f.A, ratioString(f.Ratio), f.P))
	}
	s := strings.Join(parts, ", ")
	if o := p.Standout(); o != "" {
		s += "; " + o + " stands out"
	}
	return s
}

// Chart geometry.
const (
	panelW    = 260
	panelH    = 150
	panelCols = 4
	plotTop   = 34
	plotBot   = 22
	plotLeft  = 34
)

// palette colours the toolchains, in order.
var palette = []string{"#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2", "#edc948", "#9c755f"}

// allocbenchSVG draws one small chart per pattern: a bar per toolchain with
// the median RSS per heap byte and its confidence interval; panels of
// flagged patterns have a red frame.
func allocbenchSVG(w io.Writer, r *allocbench.Report) error {
	_, err := io.WriteString(w, allocbenchChart(r))
	return err
}

func allocbenchChart(r *allocbench.Report) string {
	rows := (len(r.Patterns) + panelCols - 1) / panelCols
	width := panelCols * panelW
	legendH := 46
	height := legendH + rows*panelH + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="8" y="18" font-size="14" font-weight="bold">allocbench: Go heap Rss per HeapAlloc byte, per pattern and toolchain</text>`+"\n")
	x := 8
	for i, t := range r.Toolchains {
		name := t.GoVersion
		if name == "" {
			name = t.Name
		}
		fmt.Fprintf(&b, `<rect x="%d" y="28" width="12" height="12" fill="%s"/><text x="%d" y="38">%s</text>`+"\n", x, palette[i%len(palette)], x+16, html.EscapeString(name))
		x += 24 + 7*len(name)
	}
	fmt.Fprintf(&b, `<text x="%d" y="38" fill="#c00">red frame: flagged</text>`+"\n", x+10)
	for i, p := range r.Patterns {
		px := (i % panelCols) * panelW
		py := legendH + (i/panelCols)*panelH
		writePanel(&b, r, &p, px, py)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func writePanel(b *strings.Builder, r *allocbench.Report, p *allocbench.PatternResult, px, py int) {
	maxV := 1.0
	for _, c := range p.Cells {
		maxV = math.Max(maxV, math.Max(c.RSSPerHeapByte.Median, c.RSSPerHeapByte.Hi))
	}
	maxV = math.Ceil(maxV*2) / 2
	frame := "#ccc"
	if p.Flagged() {
		frame = "#c00"
	}
	fmt.Fprintf(b, `<g transform="translate(%d,%d)"><title>%s</title>`+"\n", px, py, html.EscapeString(p.Name+": "+flagSummaryOrNone(p)))
	fmt.Fprintf(b, `<rect x="3" y="3" width="%d" height="%d" fill="none" stroke="%s" stroke-width="%d"/>`+"\n", panelW-6, panelH-6, frame, map[bool]int{true: 2, false: 1}[p.Flagged()])
	fmt.Fprintf(b, `<text x="10" y="20" font-weight="bold">%s</text>`+"\n", html.EscapeString(p.Name))
	plotH := panelH - plotTop - plotBot
	plotW := panelW - plotLeft - 16
	y := func(v float64) float64 { return float64(plotTop) + float64(plotH)*(1-v/maxV) }
	// Axis with ticks at 0, 1 and the top.
	ticks := []float64{0, 1, maxV}
	if maxV == 1 {
		ticks = ticks[:2]
	}
	for _, t := range ticks {
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end" fill="#666">%.1f</text>`+"\n",
			plotLeft, plotLeft+plotW, y(t), y(t), plotLeft-4, y(t)+4, t)
	}
	n := len(p.Cells)
	barW := float64(plotW) / float64(n) * 0.6
	for i, c := range p.Cells {
		cx := float64(plotLeft) + float64(plotW)*(float64(i)+0.5)/float64(n)
		if c.Runs == 0 {
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#999">no runs</text>`+"\n", cx, y(0)-4)
			continue
		}
		s := c.RSSPerHeapByte
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %.3f (%.3f–%.3f), heap Rss %s of HeapAlloc %s</title></rect>`+"\n",
			cx-barW/2, y(s.Median), barW, y(0)-y(s.Median), palette[i%len(palette)], html.EscapeString(c.Toolchain), s.Median, s.Lo, s.Hi, humanize.Bytes(c.HeapRss.Median), humanize.Bytes(c.HeapAlloc.Median))
		if !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0) {
			fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/>`+"\n", cx, cx, y(s.Lo), y(s.Hi))
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%.2f</text>`+"\n", cx, panelH-8, s.Median)
	}
	b.WriteString("</g>\n")
}

func flagSummaryOrNone(p *allocbench.PatternResult) string {
	if !p.Flagged() {
		return "no significant difference"
	}
	return flagSummary(p)
}

// allocbenchHTML writes one self-contained page: the chart and the table.
func allocbenchHTML(w io.Writer, r *allocbench.Report) error {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>allocbench</title>\n")
	b.WriteString("<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;text-align:right}td:first-child,th:first-child{text-align:left}tr.flag td{color:#c00}tbody tr:nth-child(odd){background:#f6f6f6}</style>\n")
	b.WriteString("</head><body>\n<h1>allocbench</h1>\n")
	fmt.Fprintf(&b, "<p>%d patterns under %s, %s live per pattern. RSS/heap is the Go heap mappings' Rss over HeapAlloc; flagged when two toolchains differ with Mann-Whitney p ≤ %g and by at least %.0f%%.</p>\n",
		len(r.Patterns), html.EscapeString(toolchainList(r.Toolchains)), humanize.Bytes(float64(r.LiveBytes)), r.Alpha, 100*r.MinEffect)
	b.WriteString(allocbenchChart(r))
	b.WriteString("<table>\n<thead><tr>")
	for _, h := range allocbenchHeader() {
		fmt.Fprintf(&b, "<th>%s</th>", html.EscapeString(fmt.Sprint(h)))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, row := range allocbenchRows(r, "") {
		class := ""
		if s, _ := row[len(row)-1].(string); s != "" {
			class = ` class="flag"`
		}
		fmt.Fprintf(&b, "<tr%s>", class)
		for _, c := range row {
			fmt.Fprintf(&b, "<td>%s</td>", html.EscapeString(fmt.Sprint(c)))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table>\n")
	for _, warn := range r.Warnings {
		fmt.Fprintf(&b, "<p>warning: %s</p>\n", html.EscapeString(warn))
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
