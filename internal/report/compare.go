package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"

	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/flame"
	"github.com/heapscope/heapscope/internal/gate"
	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/result"
)

// compareSites is how many sites each list of a rendered comparison shows.
const compareSites = 10

// highlights is how many sentences the comparison opens with.
const highlights = 3

// Comparison is runs compared before and after (heapscope compare): in
// text, Markdown, HTML or JSON.
type Comparison struct {
	Comparison *compare.Comparison
	// Flame is the differential flame graph of the runs' allocations,
	// which the HTML page embeds; none when nil.
	Flame *flame.HTMLWidget
}

// Formats lists Comparison's formats.
func (Comparison) Formats() []Format {
	return []Format{FormatText, FormatJSON, FormatMarkdown, FormatHTML}
}

func (c Comparison) data() any { return c.Comparison }

func (c Comparison) render(w io.Writer, f Format) error {
	switch f {
	case FormatMarkdown:
		return compareMarkdown(w, c.Comparison)
	case FormatHTML:
		return compareHTML(w, c.Comparison, c.Flame)
	}
	return compareText(w, c.Comparison)
}

// compareText writes the comparison for a terminal: what differs besides
// the code, the before/after table of headline figures, the sites that
// grew and shrank most, findings that appeared or disappeared, and the
// gates.
func compareText(w io.Writer, c *compare.Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "before: %s\nafter:  %s\n", sideLine(c.Before), sideLine(c.After))
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "note: %s\n", n.Text)
	}
	if s := highlightLines(c, "`", "`"); len(s) > 0 {
		b.WriteString("\n")
		for _, l := range s {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString("\n")
	tw := plainTable()
	rightAlign(tw, 2, 5)
	header := table.Row{"", "before", "after", "delta", ""}
	if c.Tested {
		header = append(header, "")
	}
	tw.AppendHeader(header)
	for _, f := range c.Figures {
		if f.Before == nil && f.After == nil {
			continue
		}
		row := table.Row{f.Label, statValue(f.Before, f.Unit), statValue(f.After, f.Unit), figureDelta(f), relative(f.Relative)}
		if c.Tested {
			row = append(row, testText(f.Test))
		}
		tw.AppendRow(row)
	}
	b.WriteString(indent(tw.Render(), ""))
	if c.Tested {
		fmt.Fprintf(&b, "* significant at alpha %v (Mann-Whitney U test); ~ within noise\n", c.Alpha)
	}
	lists, quiet := siteLists(c)
	for _, list := range lists {
		fmt.Fprintf(&b, "\nAllocation sites that %s (bytes per %s):\n", list.title, c.PerUnit)
		tw := plainTable()
		rightAlign(tw, 1, 4)
		header := table.Row{"before", "after", "delta", "", "function", "location"}
		if c.Tested {
			header = append(header, "")
		}
		tw.AppendHeader(header)
		for _, s := range list.sites {
			row := table.Row{humanize.Bytes(s.BytesBefore.Median), humanize.Bytes(s.BytesAfter.Median), signedBytes(s.BytesDelta), relative(s.BytesRelative),
				humanize.ShortFunction(s.Function), humanize.Location(s.File, s.Line)}
			if c.Tested {
				row = append(row, testText(s.Test))
			}
			tw.AppendRow(row)
		}
		b.WriteString(indent(tw.Render(), "  "))
	}
	if q := quietSites(c, quiet); q != "" {
		fmt.Fprintf(&b, "\n%s.\n", q)
	}
	for _, list := range findingLists(c) {
		fmt.Fprintf(&b, "\n%s:\n", list.title)
		for _, f := range list.findings {
			fmt.Fprintf(&b, "  %s %s: %s%s\n", f.Severity, f.ID, f.Title, findingSite(f, plainCode))
		}
	}
	if len(c.Decisions) > 0 {
		b.WriteString("\nGates:\n")
		for _, d := range c.Decisions {
			fmt.Fprintf(&b, "  %s  %s: %s\n", outcomeLabel(d.Outcome), d.Gate, d.Reason)
		}
		b.WriteString(gateVerdict(c) + "\n")
	}
	writeWarnings(&b, c.Warnings)
	_, err := io.WriteString(w, b.String())
	return err
}

// compareMarkdown writes the comparison as Markdown, ready to paste into a
// pull request.
func compareMarkdown(w io.Writer, c *compare.Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## Memory: %s → %s\n\n", humanize.MarkdownCode(c.Before.Label), humanize.MarkdownCode(c.After.Label))
	fmt.Fprintf(&b, "%s before, %s after.", runsText(c.Before), runsText(c.After))
	if c.Tested {
		fmt.Fprintf(&b, " Changes in **bold** are significant at alpha %v (Mann-Whitney U test).", c.Alpha)
	} else {
		b.WriteString(" One run per side: no change is tested for significance (compare several runs a side, or runs of `profile --repeat N`, for that).")
	}
	b.WriteString("\n")
	if len(c.Decisions) > 0 {
		fmt.Fprintf(&b, "\n**%s**\n", gateVerdict(c))
	}
	if len(c.Notes) > 0 {
		b.WriteString("\n> [!NOTE]\n")
		for _, n := range c.Notes {
			fmt.Fprintf(&b, "> - %s\n", humanize.MarkdownText(n.Text))
		}
	}
	if s := highlightLines(c, "`", "`"); len(s) > 0 {
		b.WriteString("\n")
		for _, l := range s {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	b.WriteString("\n| | before | after | delta | |\n|:--|--:|--:|--:|--:|\n")
	for _, f := range c.Figures {
		if f.Before == nil && f.After == nil {
			continue
		}
		delta, rel := figureDelta(f), relative(f.Relative)
		if f.Significant() {
			delta, rel = strong(delta), strong(rel)
		}
		if f.Test != nil {
			rel += " " + pText(f.Test)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", f.Label, statValue(f.Before, f.Unit), statValue(f.After, f.Unit), delta, rel)
	}
	lists, quiet := siteLists(c)
	for _, list := range lists {
		fmt.Fprintf(&b, "\n### Allocation sites that %s (bytes per %s)\n\n| before | after | delta | | function | location |\n|--:|--:|--:|--:|:--|:--|\n", list.title, c.PerUnit)
		for _, s := range list.sites {
			delta, rel := signedBytes(s.BytesDelta), relative(s.BytesRelative)
			if s.Significant() {
				delta, rel = strong(delta), strong(rel)
			}
			if s.Test != nil {
				rel += " " + pText(s.Test)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", humanize.Bytes(s.BytesBefore.Median), humanize.Bytes(s.BytesAfter.Median), delta, rel,
				humanize.MarkdownCode(humanize.ShortFunction(s.Function)), humanize.MarkdownCode(humanize.Location(s.File, s.Line)))
		}
	}
	if q := quietSites(c, quiet); q != "" {
		fmt.Fprintf(&b, "\n%s.\n", q)
	}
	for _, list := range findingLists(c) {
		fmt.Fprintf(&b, "\n### %s\n\n", list.title)
		for _, f := range list.findings {
			fmt.Fprintf(&b, "- **%s** %s: %s%s\n", f.Severity, humanize.MarkdownCode(f.ID), humanize.MarkdownText(f.Title), findingSite(f, humanize.MarkdownCode))
		}
	}
	if len(c.Decisions) > 0 {
		b.WriteString("\n### Gates\n\n| result | gate | why |\n|:--|:--|:--|\n")
		for _, d := range c.Decisions {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", outcomeMark(d.Outcome), humanize.MarkdownCode(d.Gate), humanize.MarkdownText(d.Reason))
		}
	}
	writeMarkdownWarnings(&b, "### Warnings", c.Warnings)
	_, err := io.WriteString(w, b.String())
	return err
}

// highlightLines are the comparison's headline sentences: the significant
// (or, with one run a side, the largest) changes of per-request bytes by
// site, such as "`Process` allocates 38 % fewer bytes per request
// (p < 0.01, n = 6+6)".
func highlightLines(c *compare.Comparison, open, close string) []string {
	var out []string
	add := func(s compare.SiteChange) {
		if len(out) == highlights || s.BytesRelative == nil || (c.Tested && !s.Significant()) || (!c.Tested && !s.Sampled()) {
			return
		}
		r := *s.BytesRelative
		how := fmt.Sprintf("%.0f %% fewer", -r*100)
		if r > 0 {
			how = fmt.Sprintf("%.0f %% more", r*100)
		}
		why := "one run per side, not tested"
		if s.Test != nil {
			why = fmt.Sprintf("%s, n = %d+%d", pSentence(s.Test.P), s.Test.N1, s.Test.N2)
		}
		out = append(out, fmt.Sprintf("%s%s%s allocates %s bytes per %s at %s: %s → %s (%s).",
			open, humanize.ShortFunction(s.Function), close, how, c.PerUnit, humanize.Location(s.File, s.Line), humanize.Bytes(s.BytesBefore.Median), humanize.Bytes(s.BytesAfter.Median), why))
	}
	// The largest changes first, whichever way.
	i, j := 0, 0
	for i < len(c.Shrank) || j < len(c.Grew) {
		if j >= len(c.Grew) || (i < len(c.Shrank) && -c.Shrank[i].BytesDelta >= c.Grew[j].BytesDelta) {
			add(c.Shrank[i])
			i++
		} else {
			add(c.Grew[j])
			j++
		}
	}
	return out
}

func pSentence(p float64) string {
	switch {
	case p < 0.001:
		return "p < 0.001"
	case p < 0.01:
		return "p < 0.01"
	}
	return fmt.Sprintf("p = %.2f", p)
}

func sideLine(s compare.SideInfo) string {
	if len(s.Runs) == 1 {
		return s.Label
	}
	return fmt.Sprintf("%s (%s)", s.Label, runsText(s))
}

func runsText(s compare.SideInfo) string {
	if len(s.Runs) == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", len(s.Runs))
}

// FigureValue formats a value of a headline figure in its unit.
func FigureValue(v float64, unit string) string {
	switch unit {
	case "bytes":
		return humanize.Bytes(v)
	case "bytes/s":
		return humanize.Bytes(v) + "/s"
	case "seconds":
		return humanize.Seconds(v)
	case "1/s", "requests/s":
		return humanize.Rate(v)
	case "fraction":
		return humanize.Percent(v)
	}
	return humanize.Count(v)
}

func statValue(s *compare.Stat, unit string) string {
	if s == nil {
		return "—"
	}
	return FigureValue(s.Median, unit)
}

func figureDelta(f compare.FigureChange) string {
	if !f.Compared() {
		return ""
	}
	if f.Unit == "fraction" {
		return fmt.Sprintf("%+.1f pp", f.Delta*100)
	}
	s := FigureValue(math.Abs(f.Delta), f.Unit)
	if f.Delta < 0 {
		return "-" + s
	}
	return "+" + s
}

// signedBytes is a change in bytes with its sign: +1.5 KiB, -3.0 MiB.
func signedBytes(v float64) string {
	if v < 0 {
		return humanize.Bytes(v)
	}
	return "+" + humanize.Bytes(v)
}

// signedCount is a change in a count with its sign: +2, -12.3k.
func signedCount(v float64) string {
	if v < 0 {
		return humanize.Count(v)
	}
	return "+" + humanize.Count(v)
}

func relative(r *float64) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf("%+.1f%%", *r*100)
}

// testText is the significance column: "* p=0.002 n=6+6" for a change
// outside noise, "~ p=0.70 n=6+6" within it.
func testText(t *compare.Test) string {
	if t == nil {
		return ""
	}
	mark := "~"
	if t.Significant {
		mark = "*"
	}
	return mark + " " + pText(t)
}

func pText(t *compare.Test) string {
	return fmt.Sprintf("(p=%.3f n=%d+%d)", t.P, t.N1, t.N2)
}

// siteList is one of a comparison's lists of sites, for every format to
// show alike.
type siteList struct {
	id, title string
	sites     []compare.SiteChange
}

// siteLists are the comparison's lists of sites that are not empty, the
// sites that grew most first, each cut to compareSites. A site is listed
// only when its change tells: significant when the sides were tested,
// standing on compare.MinSiteSamples samples or more with one run a side
// — "100 % fewer" from one sample a side is the sampler's luck, not a
// change. quiet counts the sites left out so.
func siteLists(c *compare.Comparison) (lists []siteList, quiet int) {
	for _, l := range []siteList{{"sites-grew", "grew most", c.Grew}, {"sites-shrank", "shrank most", c.Shrank}} {
		var told []compare.SiteChange
		for _, s := range l.sites {
			if c.Tested && s.Significant() || !c.Tested && s.Sampled() {
				told = append(told, s)
			} else {
				quiet++
			}
		}
		if len(told) > 0 {
			l.sites = told[:min(len(told), compareSites)]
			lists = append(lists, l)
		}
	}
	return lists, quiet
}

// quietSites says how many sites changed within noise, unlisted; "" for
// none.
func quietSites(c *compare.Comparison, quiet int) string {
	if quiet == 0 {
		return ""
	}
	why := "fewer than 4 heap profile samples apart, with one run a side"
	if c.Tested {
		why = "not significant"
	}
	return fmt.Sprintf("%d other site%s changed within noise (%s): not listed", quiet, plural(quiet), why)
}

// findingList is one of a comparison's lists of findings.
type findingList struct {
	title    string
	findings []result.Finding
}

// findingLists are the comparison's lists of findings that are not
// empty: those that appeared, then those that disappeared.
func findingLists(c *compare.Comparison) []findingList {
	var out []findingList
	for _, l := range []findingList{{"Findings that appeared", c.Appeared}, {"Findings that disappeared", c.Disappeared}} {
		if len(l.findings) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// plainCode leaves a name as it is, for findingSite where no markup marks
// code.
func plainCode(s string) string { return s }

// findingSite names a finding's site after its title, unless the title
// already does (diagnose's titles name function and file:line).
func findingSite(f result.Finding, code func(string) string) string {
	if f.Function == "" || strings.Contains(f.Title, humanize.Location(f.File, f.Line)) {
		return ""
	}
	return " at " + code(humanize.ShortFunction(f.Function)) + " (" + humanize.Location(f.File, f.Line) + ")"
}

func gateVerdict(c *compare.Comparison) string {
	var fail, warn int
	for _, d := range c.Decisions {
		switch d.Outcome {
		case gate.Fail:
			fail++
		case gate.Warn:
			warn++
		}
	}
	n := len(c.Decisions)
	switch {
	case fail > 0:
		return fmt.Sprintf("FAIL: %d of %s failed", fail, countGates(n))
	case warn > 0:
		return fmt.Sprintf("PASS with warnings: %d of %s beyond their threshold but not significant", warn, countGates(n))
	}
	return "PASS: " + countGates(n)
}

// countGates counts gates in words: "1 gate", "3 gates".
func countGates(n int) string {
	if n == 1 {
		return "1 gate"
	}
	return fmt.Sprintf("%d gates", n)
}

// strong marks s as strong in Markdown; an empty cell stays empty, not
// "****".
func strong(s string) string {
	if s == "" {
		return ""
	}
	return "**" + s + "**"
}
