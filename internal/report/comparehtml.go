package report

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/flame"
	"github.com/heapscope/heapscope/internal/humanize"
)

// compareHTML writes the comparison as one page that makes no external
// request: the tables of compareText, changes outside noise coloured (green
// better, red worse), and the differential flame graph of the runs'
// allocations when fl is not nil.
func compareHTML(w io.Writer, c *compare.Comparison, fl *flame.HTMLWidget) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	e := html.EscapeString
	title := fmt.Sprintf("heapscope compare: %s → %s", c.Before.Label, c.After.Label)
	if err := flame.WriteHTMLHead(bw, title, compareStyle, fl != nil); err != nil {
		return err
	}
	fmt.Fprintf(bw, "<h1>%s</h1>\n", e(title))
	fmt.Fprintf(bw, "<p>before: %s · after: %s. ", e(sideLine(c.Before)), e(sideLine(c.After)))
	if c.Tested {
		fmt.Fprintf(bw, "Coloured changes are significant at alpha %v (Mann-Whitney U test); the others are within noise.</p>\n", c.Alpha)
	} else {
		bw.WriteString("One run per side: no change is tested for significance, so none is coloured; compare several runs a side (or runs of <code>profile --repeat N</code>).</p>\n")
	}
	for _, n := range c.Notes {
		fmt.Fprintf(bw, "<div class=\"note\" data-kind=\"%s\">%s</div>\n", e(n.Kind), e(n.Text))
	}
	if hl := highlightLines(c, "<code>", "</code>"); len(hl) > 0 {
		bw.WriteString("<ul id=\"highlights\">\n")
		for _, l := range hl {
			// The sentence holds function names and locations: escape
			// all but the code tags.
			l = strings.NewReplacer("&lt;code&gt;", "<code>", "&lt;/code&gt;", "</code>").Replace(e(l))
			fmt.Fprintf(bw, "<li>%s</li>\n", l)
		}
		bw.WriteString("</ul>\n")
	}

	bw.WriteString("<h2>Headline figures</h2>\n<table id=\"figures\">\n<thead><tr><th></th><th>before</th><th>after</th><th>delta</th><th></th>")
	if c.Tested {
		bw.WriteString("<th>test</th>")
	}
	bw.WriteString("</tr></thead>\n<tbody>\n")
	for _, f := range c.Figures {
		if f.Before == nil && f.After == nil {
			continue
		}
		cls := ""
		if f.Significant() {
			cls = changeClass(f.Delta, f.Better)
		}
		fmt.Fprintf(bw, "<tr data-figure=\"%s\"><td class=\"name\">%s</td><td>%s</td><td>%s</td><td class=\"%s\">%s</td><td class=\"%s\">%s</td>",
			e(f.Name), e(f.Label), e(statValue(f.Before, f.Unit)), e(statValue(f.After, f.Unit)), cls, e(figureDelta(f)), cls, e(relative(f.Relative)))
		if c.Tested {
			fmt.Fprintf(bw, "<td class=\"muted\">%s</td>", e(testText(f.Test)))
		}
		bw.WriteString("</tr>\n")
	}
	bw.WriteString("</tbody>\n</table>\n")

	lists, quiet := siteLists(c)
	for _, list := range lists {
		fmt.Fprintf(bw, "<h2>Allocation sites that %s (bytes per %s)</h2>\n<table id=\"%s\">\n<thead><tr><th>before</th><th>after</th><th>delta</th><th></th><th>function</th><th>location</th>", list.title, e(c.PerUnit), list.id)
		if c.Tested {
			bw.WriteString("<th>test</th>")
		}
		bw.WriteString("</tr></thead>\n<tbody>\n")
		for _, s := range list.sites {
			cls := ""
			if s.Significant() {
				cls = changeClass(s.BytesDelta, -1)
			}
			fmt.Fprintf(bw, "<tr><td>%s</td><td>%s</td><td class=\"%s\">%s</td><td class=\"%s\">%s</td><td class=\"fn\" title=\"%s\">%s</td><td class=\"loc\" title=\"%s\">%s</td>",
				e(humanize.Bytes(s.BytesBefore.Median)), e(humanize.Bytes(s.BytesAfter.Median)), cls, e(signedBytes(s.BytesDelta)), cls, e(relative(s.BytesRelative)),
				e(s.Function), e(humanize.ShortFunction(s.Function)), e(s.File), e(humanize.Location(s.File, s.Line)))
			if c.Tested {
				fmt.Fprintf(bw, "<td class=\"muted\">%s</td>", e(testText(s.Test)))
			}
			bw.WriteString("</tr>\n")
		}
		bw.WriteString("</tbody>\n</table>\n")
	}
	if q := quietSites(c, quiet); q != "" {
		fmt.Fprintf(bw, "<p class=\"muted\">%s.</p>\n", e(q))
	}
	for _, list := range findingLists(c) {
		fmt.Fprintf(bw, "<h2>%s</h2>\n<ul>\n", list.title)
		for _, f := range list.findings {
			fmt.Fprintf(bw, "<li><b>%s</b> <code>%s</code>: %s%s</li>\n", e(f.Severity), e(f.ID), e(f.Title), e(findingSite(f, plainCode)))
		}
		bw.WriteString("</ul>\n")
	}
	if len(c.Decisions) > 0 {
		fmt.Fprintf(bw, "<h2>Gates</h2>\n<p class=\"%s\">%s</p>\n<ul id=\"gates\">\n", map[bool]string{true: "fail", false: ""}[c.Failed()], e(gateVerdict(c)))
		for _, d := range c.Decisions {
			fmt.Fprintf(bw, "<li>%s <code>%s</code>: %s</li>\n", e(outcomeMark(d.Outcome)), e(d.Gate), e(d.Reason))
		}
		bw.WriteString("</ul>\n")
	}
	for _, wmsg := range c.Warnings {
		fmt.Fprintf(bw, "<div class=\"note\">warning: %s</div>\n", e(wmsg))
	}
	bw.WriteString("<h2>Differential flame graph of allocations</h2>\n")
	if fl != nil {
		fmt.Fprintf(bw, "<p class=\"muted\">The after runs' allocations, per %s, coloured by change against before: red grew, blue shrank. The \"vanished\" view has the before runs' shape.</p>\n", e(c.PerUnit))
		if err := flame.WriteHTMLWidget(bw, *fl); err != nil {
			return err
		}
	} else {
		bw.WriteString("<p class=\"muted\">Not drawn: a side has no allocs-delta profile.</p>\n")
	}
	bw.WriteString("</body>\n</html>\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write compare html: %w", err)
	}
	return nil
}

// compareStyle is the style of the comparison's page.
const compareStyle = `body { margin: 16px 20px; font: 14px system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 12px; }
h2 { font-size: 16px; margin: 20px 0 8px; }
table { border-collapse: collapse; }
th, td { padding: 3px 10px; border-bottom: 1px solid #e4e4e4; text-align: right; white-space: nowrap; }
th:first-child, td.name, td.fn, td.loc { text-align: left; }
td.fn, td.loc { font-family: ui-monospace, monospace; font-size: 13px; }
.better { background: #dff3e0; color: #145a1c; font-weight: 600; }
.worse { background: #fbe1e0; color: #8a1c17; font-weight: 600; }
.note { background: #fff6d6; padding: 6px 10px; border-left: 3px solid #e0b400; margin: 4px 0; }
.fail { color: #8a1c17; font-weight: 600; }
.muted { color: #777; }
`

// changeClass colours a significant change: better or worse, as the
// figure's direction says.
func changeClass(delta float64, better int) string {
	switch {
	case delta == 0:
		return ""
	case (delta < 0) == (better < 0):
		return "better"
	}
	return "worse"
}
