package report

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/heapscope/heapscope/internal/flame"
	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/report/chart"
	"github.com/heapscope/heapscope/internal/result"
)

// HTMLFlame is a flame graph to embed in report.html.
type HTMLFlame struct {
	// ID names the graph's element (letters, digits, '-'), such as
	// "flame-alloc_space".
	ID    string
	Title string
	// Path is the graph's own file in the run directory, linked from the
	// report; empty for none.
	Path string
	// SVG is the graph as flame.WriteSVG draws it: a document of its own
	// with its script, embedded in an iframe so that several graphs on one
	// page keep their zoom and search apart.
	SVG []byte
}

// HTML writes report.html: one page with the run's summary, findings,
// charts of heap in use and GC pauses over the window, the flame graphs
// and the top tables. Everything is inline (style, charts drawn here as
// SVG, the flame graphs' SVG and script), so the file makes no external
// request and reads the same copied anywhere; the links to the run's
// other files work beside them.
func HTML(w io.Writer, r *result.Run, flames []HTMLFlame) error {
	return HTMLAt(w, r, flames, "")
}

// HTMLAt is HTML for a page served away from the run's files: files, such
// as "run/", is put before every link to one of them (profiles, flame
// graphs, windows), so that the page's links work where it is served.
func HTMLAt(w io.Writer, r *result.Run, flames []HTMLFlame, files string) error {
	if r.Repeat != nil {
		return repeatHTML(w, r, flames, files)
	}
	var b strings.Builder
	e := html.EscapeString
	if err := writeHTMLHead(&b, r, "Summary", "Findings", "Charts", "Flame graphs", "Top sites", "MemStats", "Profiles"); err != nil {
		return err
	}

	b.WriteString("<section id=\"summary\">\n<h2>Summary</h2>\n<table class=\"kv\">\n")
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "<tr><th>%s</th><td>%s</td></tr>\n", e(k), e(v))
		}
	}
	if r.Target.PID > 0 {
		row("process", fmt.Sprintf("pid %d", r.Target.PID))
	}
	row("Go", r.Target.GoVersion)
	row("main module", r.Target.MainModule)
	for _, k := range slices.Sorted(maps.Keys(r.Target.Env)) {
		row(k, r.Target.Env[k])
	}
	row("allocations over the window", allocationLine(r))
	row("per request", perRequestLine(r))
	row("heap in use", growthLine(r))
	row("GC", gcLine(r))
	row("RSS", rssLine(r))
	row("load", loadLine(r))
	b.WriteString("</table>\n</section>\n")

	writeFindings(&b, r.Findings, r.DiagnosisNotes)

	b.WriteString("<section id=\"charts\">\n<h2>Heap in use</h2>\n")
	if g := r.HeapGrowth; g != nil && len(g.Snapshots) > 0 {
		b.WriteString("<p class=\"note\">inuse_space of each heap snapshot, as of the GC heapscope forced when it fetched it (<code>heap?gc=1</code>).</p>\n")
		c := runChart("heap-chart", "Heap in use across the snapshots", r, chart.Axis{Format: humanize.Bytes, Bytes: true})
		s := chart.Series{Color: "#1565c0", Style: chart.Dots}
		for _, snap := range g.Snapshots {
			s.Points = append(s.Points, chart.Point{X: snap.OffsetSeconds, Y: float64(snap.InuseBytes),
				Tip: fmt.Sprintf("+%s: %s in use in %s objects (%s)", humanize.Seconds(snap.OffsetSeconds), humanize.Bytes(float64(snap.InuseBytes)), humanize.Count(float64(snap.InuseObjects)), snap.Profile)})
		}
		c.Series = []chart.Series{s}
		if err := c.WriteSVG(&b); err != nil {
			return err
		}
	} else {
		b.WriteString("<p class=\"none\">No heap snapshot.</p>\n")
	}
	b.WriteString("<h2>GC pauses</h2>\n")
	if ps := r.MemStats.GCPauses; len(ps) > 0 {
		note := "Each stop-the-world pause of the window at the time it ended, from the runtime's pause ring; heapscope's snapshots force a GC each."
		if r.MemStats.GCRingOverflowed {
			note += fmt.Sprintf(" The ring keeps 256 pauses: these are the last %d of the window's %d cycles.", len(ps), r.MemStats.GCCycles)
		}
		fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n", e(note))
		c := runChart("gc-chart", "GC pauses over the window", r, chart.Axis{Format: humanize.Seconds})
		s := chart.Series{Color: "#c62828", Style: chart.Stems}
		for _, p := range ps {
			s.Points = append(s.Points, chart.Point{X: p.OffsetSeconds, Y: p.PauseSeconds,
				Tip: fmt.Sprintf("cycle %d: paused %s, ended at +%s", p.Cycle, humanize.Seconds(p.PauseSeconds), humanize.Seconds(p.OffsetSeconds))})
		}
		c.Series = []chart.Series{s}
		if err := c.WriteSVG(&b); err != nil {
			return err
		}
	} else {
		b.WriteString("<p class=\"none\">No GC pause recorded over the window.</p>\n")
	}
	b.WriteString("</section>\n")

	writeFlames(&b, flames, files)

	b.WriteString("<section id=\"top\">\n")
	for _, t := range r.Top {
		fmt.Fprintf(&b, "<h2>Top %s</h2>\n<p class=\"note\">%s. Total %s, from <code>%s</code>.</p>\n",
			e(t.SampleType), e(upperFirst(t.Semantics)), e(humanize.Value(t.Total, t.Unit)), e(t.Profile))
		b.WriteString("<table class=\"sites\">\n<tr><th>flat</th><th>flat%</th><th>cum</th><th>cum%</th><th>function</th><th>location</th></tr>\n")
		for _, s := range t.Sites {
			fn := humanize.ShortFunction(s.Function)
			if len(s.Inlined) > 1 {
				fn += " (inlined in " + humanize.ShortFunction(s.Inlined[len(s.Inlined)-1]) + ")"
			}
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td title=\"%s\">%s</td><td title=\"%s\">%s</td></tr>\n",
				e(humanize.Value(s.Flat, t.Unit)), e(humanize.Percent(s.FlatShare)), e(humanize.Value(s.Cum, t.Unit)), e(humanize.Percent(s.CumShare)),
				e(s.Function), e(fn), e(s.File), e(humanize.Location(s.File, s.Line)))
		}
		b.WriteString("</table>\n")
	}
	b.WriteString("</section>\n")

	ms := r.MemStats
	b.WriteString("<section id=\"memstats\">\n<h2>MemStats at the window's end</h2>\n<table class=\"kv\">\n")
	for _, f := range []struct {
		name string
		v    uint64
	}{
		{"Alloc", ms.AllocBytes}, {"TotalAlloc", ms.TotalAllocBytes}, {"Sys", ms.SysBytes},
		{"HeapSys", ms.HeapSysBytes}, {"HeapInuse", ms.HeapInuseBytes}, {"HeapIdle", ms.HeapIdleBytes},
		{"HeapReleased", ms.HeapReleasedBytes}, {"StackInuse", ms.StackInuseBytes}, {"NextGC", ms.NextGCBytes},
	} {
		row(f.name, humanize.Bytes(float64(f.v)))
	}
	row("HeapObjects", humanize.Count(float64(ms.HeapObjects)))
	row("NumGC", strconv.FormatUint(uint64(ms.NumGC), 10))
	b.WriteString("</table>\n</section>\n")

	b.WriteString("<section id=\"profiles\">\n<h2>Profiles</h2>\n<table class=\"files\">\n<tr><th>kind</th><th>file</th><th>covers</th></tr>\n")
	for _, p := range r.Profiles {
		fmt.Fprintf(&b, "<tr><td>%s</td><td><a href=\"%s\">%s</a></td><td>%s</td></tr>\n", e(p.Kind), e(files+p.Path), e(p.Path), e(p.Semantics))
	}
	b.WriteString("</table>\n")
	if len(r.Files.Flames) > 0 {
		b.WriteString("<p>Flame graph files:")
		for _, f := range r.Files.Flames {
			fmt.Fprintf(&b, " <a href=\"%s\">%s</a>", e(files+f.Path), e(f.Path))
		}
		b.WriteString("</p>\n")
	}
	b.WriteString("</section>\n")

	if len(r.Warnings) > 0 {
		b.WriteString("<section id=\"warnings\">\n<h2>Warnings</h2>\n<ul>\n")
		for _, wmsg := range r.Warnings {
			fmt.Fprintf(&b, "<li>%s</li>\n", e(wmsg))
		}
		b.WriteString("</ul>\n</section>\n")
	}
	b.WriteString("</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// runChart is a chart of report.html over the run's window; its page
// says what it is, so it draws no title.
func runChart(id, label string, r *result.Run, y chart.Axis) chart.Chart {
	return chart.Chart{
		ID: id, Label: label, Width: 720, Height: 260,
		X: chart.Axis{Label: "seconds from the window's start", Format: humanize.Seconds, Max: r.Window.DurationSeconds},
		Y: y,
	}
}

// writeFindings writes the findings table, or says there is none.
func writeFindings(b *strings.Builder, findings []result.Finding, notes []string) {
	e := html.EscapeString
	b.WriteString("<section id=\"findings\">\n<h2>Findings</h2>\n")
	defer func() {
		if len(notes) > 0 {
			b.WriteString("<ul class=\"notes\">\n")
			for _, n := range notes {
				fmt.Fprintf(b, "<li>%s</li>\n", e(n))
			}
			b.WriteString("</ul>\n")
		}
		b.WriteString("</section>\n")
	}()
	if len(findings) == 0 {
		b.WriteString("<p class=\"none\">No findings.</p>\n")
		return
	}
	b.WriteString("<table class=\"findings\">\n<tr><th>severity</th><th>finding</th><th>where</th><th>evidence</th><th>fix</th><th>confidence</th></tr>\n")
	for _, f := range findings {
		where := humanize.ShortFunction(f.Function)
		if f.File != "" {
			if where != "" {
				where += " "
			}
			where += humanize.Location(f.File, f.Line)
		}
		var ev []string
		for _, k := range slices.Sorted(maps.Keys(f.Evidence)) {
			ev = append(ev, k+" "+EvidenceValue(k, f.Evidence[k]))
		}
		fix := e(f.Fix)
		for _, esc := range f.Escape {
			fix += "<br><code>" + e(esc) + "</code>"
		}
		symptoms := ""
		if len(f.Symptoms) > 0 {
			symptoms = "<details><summary>symptoms of the same cause</summary><ul>"
			for _, s := range f.Symptoms {
				symptoms += "<li>" + e(s.Severity) + ": " + e(s.Title) + " <code>" + e(s.ID) + "</code></li>"
			}
			symptoms += "</ul></details>"
		}
		fmt.Fprintf(b, "<tr class=\"severity-%s\"><td>%s</td><td><b>%s</b><br><code>%s</code>%s</td><td title=\"%s\">%s</td><td>%s</td><td>%s</td><td>%.0f%%</td></tr>\n",
			e(f.Severity), e(f.Severity), e(f.Title), e(f.ID), symptoms, e(f.Function), e(where), e(strings.Join(ev, ", ")), fix, 100*f.Confidence)
	}
	b.WriteString("</table>\n")
}

var svgSizeRE = regexp.MustCompile(`<svg[^>]*?\swidth="(\d+)"[^>]*?\sheight="(\d+)"`)

// svgSize reads the width and height of an SVG's root element, for the
// aspect ratio of its frame; 1200 by 400 when it does not say.
func svgSize(svg []byte) (width, height int) {
	head := svg[:min(len(svg), 1024)]
	if m := svgSizeRE.FindSubmatch(head); m != nil {
		w, err1 := strconv.Atoi(string(m[1]))
		h, err2 := strconv.Atoi(string(m[2]))
		if err1 == nil && err2 == nil && w > 0 && h > 0 {
			return w, h
		}
	}
	return 1200, 400
}

// srcdocHead opens the document of a flame graph's frame: the SVG fills
// the frame's width.
const srcdocHead = `<!DOCTYPE html><html><head><meta charset="utf-8"><style>html,body{margin:0}svg{display:block;width:100%;height:auto}</style></head><body>`

// stripXMLDecl drops an XML declaration, which an HTML document cannot
// hold.
func stripXMLDecl(svg []byte) []byte {
	s := bytes.TrimLeft(svg, " \t\r\n")
	if bytes.HasPrefix(s, []byte("<?xml")) {
		if i := bytes.Index(s, []byte("?>")); i >= 0 {
			return s[i+2:]
		}
	}
	return s
}

// escapeTo writes p escaped for an HTML attribute value, as
// html.EscapeString does, without a copy of the whole.
func escapeTo(b *strings.Builder, p []byte) {
	last := 0
	for i, c := range p {
		var rep string
		switch c {
		case '&':
			rep = "&amp;"
		case '\'':
			rep = "&#39;"
		case '<':
			rep = "&lt;"
		case '>':
			rep = "&gt;"
		case '"':
			rep = "&#34;"
		default:
			continue
		}
		b.Write(p[last:i])
		b.WriteString(rep)
		last = i + 1
	}
	b.Write(p[last:])
}

const htmlStyle = `body { margin: 0 auto; max-width: 1240px; padding: 16px 20px 40px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; word-break: break-all; }
h2 { font-size: 17px; margin: 26px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 3px; }
nav a { margin-right: 12px; }
.meta { color: #555; margin: 0 0 8px; }
.status { display: inline-block; padding: 0 8px; border-radius: 9px; color: #fff; background: #2e7d32; margin-right: 6px; }
.status-partial { background: #ef6c00; }
.status-failed { background: #c62828; }
.alert { border-left: 4px solid #ef6c00; padding-left: 10px; }
.note { color: #555; margin: 4px 0; }
.none { color: #555; font-style: italic; }
table { border-collapse: collapse; margin: 6px 0; }
th, td { text-align: left; vertical-align: top; padding: 3px 10px 3px 0; border-bottom: 1px solid #eee; }
table.kv th { white-space: nowrap; color: #444; font-weight: 600; }
table.sites td:nth-child(-n+4) { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.findings td:last-child { text-align: right; }
tr.severity-high td:first-child { color: #c62828; font-weight: 600; }
tr.severity-medium td:first-child { color: #ef6c00; font-weight: 600; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; }
svg.chart { display: block; width: 100%; max-width: 900px; height: auto; margin: 6px 0 12px; }
figure.flame { margin: 10px 0 22px; }
figure.flame figcaption { font-weight: 600; margin-bottom: 4px; }
figure.flame iframe { display: block; width: 100%; border: 1px solid #ddd; }
`

// writeHTMLHead writes the page's head and header for run r, with a
// navigation link to each named section (its id: the name's first word,
// lower case), and the failures when there are some.
func writeHTMLHead(b *strings.Builder, r *result.Run, sections ...string) error {
	e := html.EscapeString
	title := "heapscope run: " + r.Target.URL
	if err := flame.WriteHTMLHead(b, title, htmlStyle, false); err != nil {
		return err
	}
	var nav strings.Builder
	for i, name := range sections {
		if i > 0 {
			nav.WriteString(" ")
		}
		id, _, _ := strings.Cut(strings.ToLower(name), " ")
		if id == "flame" {
			id = "flames"
		}
		fmt.Fprintf(&nav, `<a href="#%s">%s</a>`, e(id), e(name))
	}
	fmt.Fprintf(b, `<header>
<h1>%s</h1>
<p class="meta"><span class="status status-%s">%s</span> window %s – %s (%s) · heapscope %s</p>
<nav>%s</nav>
</header>
`, e(title), e(string(r.Status)), e(string(r.Status)),
		e(r.Window.Start.Format("2006-01-02 15:04:05.000Z")), e(r.Window.End.Format("15:04:05.000Z")),
		e(humanize.Seconds(r.Window.DurationSeconds)), e(r.Heapscope.Version), nav.String())

	if len(r.Failures) > 0 {
		b.WriteString("<section id=\"failures\" class=\"alert\">\n<h2>Not collected</h2>\n<ul>\n")
		for _, f := range r.Failures {
			fmt.Fprintf(b, "<li><b>%s</b>: %s</li>\n", e(f.Step), e(f.Error))
		}
		b.WriteString("</ul>\n</section>\n")
	}
	return nil
}

// writeFlames writes the section of the embedded flame graphs, their
// files' links under files.
func writeFlames(b *strings.Builder, flames []HTMLFlame, files string) {
	e := html.EscapeString
	b.WriteString("<section id=\"flames\">\n<h2>Flame graphs</h2>\n")
	if len(flames) == 0 {
		b.WriteString("<p class=\"none\">No flame graph.</p>\n")
	}
	for _, f := range flames {
		width, height := svgSize(f.SVG)
		link := ""
		if f.Path != "" {
			link = fmt.Sprintf(` · <a href="%s">open on its own</a>`, e(files+f.Path))
		}
		fmt.Fprintf(b, "<figure class=\"flame\">\n<figcaption>%s%s</figcaption>\n", e(f.Title), link)
		fmt.Fprintf(b, "<iframe id=\"%s\" title=\"%s\" style=\"aspect-ratio: %d / %d\" srcdoc=\"", e(f.ID), e(f.Title), width, height)
		b.Grow(len(f.SVG) + len(f.SVG)/4 + 256)
		escapeTo(b, []byte(srcdocHead))
		escapeTo(b, stripXMLDecl(f.SVG))
		escapeTo(b, []byte("</body></html>"))
		b.WriteString("\"></iframe>\n</figure>\n")
	}
	b.WriteString("</section>\n")
}
