package report

import (
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"golang.org/x/perf/benchunit"

	"github.com/heapscope/heapscope/internal/bench"
	"github.com/heapscope/heapscope/internal/gate"
	"github.com/heapscope/heapscope/internal/humanize"
)

// Bench is go test -bench results compared (heapscope bench compare,
// bench run): benchstat-like tables, the gates' decisions, the
// attributions and the warnings as text or Markdown (for a pull request),
// the report as JSON, or as JUnit XML for CI.
type Bench struct {
	Report *bench.Report
}

// Formats lists Bench's formats.
func (Bench) Formats() []Format {
	return []Format{FormatText, FormatJSON, FormatMarkdown, FormatJUnit}
}

func (d Bench) data() any { return d.Report }

func (d Bench) render(w io.Writer, f Format) error {
	switch f {
	case FormatMarkdown:
		return benchMarkdown(w, d.Report)
	case FormatJUnit:
		return benchJUnit(w, d.Report)
	}
	return benchText(w, d.Report)
}

// benchText writes the report as a benchstat-like table per file
// configuration and unit, then the gates' decisions, the attributions and
// the warnings.
func benchText(w io.Writer, r *bench.Report) error {
	var b strings.Builder
	var prev []bench.ConfigValue
	for i, t := range r.Tables {
		if i > 0 {
			b.WriteString("\n")
		}
		for _, kv := range t.Config {
			if i == 0 || benchConfigValue(prev, kv.Key) != kv.Value {
				fmt.Fprintf(&b, "%s: %s\n", kv.Key, kv.Value)
			}
		}
		prev = t.Config
		var notes footnotes
		tw := benchTable()
		rightAlign(tw, 2, 3)
		tw.AppendHeader(table.Row{t.Unit, r.Old, r.New, "vs base"})
		for _, row := range benchRows(r, t, &notes) {
			tw.AppendRow(row)
		}
		b.WriteString(indent(tw.Render(), ""))
		for i, n := range notes.list {
			fmt.Fprintf(&b, "%s %s\n", superscript(i+1), n)
		}
	}
	if len(r.Decisions) > 0 {
		fmt.Fprintf(&b, "\ngates (alpha %v):\n", r.Alpha)
		tw := benchTable()
		for _, d := range r.Decisions {
			tw.AppendRow(table.Row{outcomeLabel(d.Outcome), d.Gate, benchmarkLabel(r, d.Benchmark, d.Config), d.Reason})
		}
		b.WriteString(indent(tw.Render(), "  "))
		b.WriteString(benchVerdict(r) + "\n")
	}
	for _, a := range r.Attributions {
		b.WriteString("\n" + attributionHeading(r, a) + ":\n")
		if a.Err != "" {
			fmt.Fprintf(&b, "  %s\n", a.Err)
			continue
		}
		if len(a.Sites) == 0 {
			b.WriteString("  no allocation site changed by more than the noise floor\n")
			continue
		}
		tw := benchTable()
		tw.AppendHeader(table.Row{"bytes/op", "old → new", "objects/op", "old → new", "site", "function"})
		for _, s := range a.Sites {
			tw.AppendRow(siteRow(s))
		}
		b.WriteString(indent(tw.Render(), "  "))
	}
	writeProblems(&b, "warning", r.Warnings)
	writeProblems(&b, "error", r.Errors)
	_, err := io.WriteString(w, b.String())
	return err
}

// benchMarkdown writes the report as Markdown, ready to paste into a pull
// request.
func benchMarkdown(w io.Writer, r *bench.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## Benchmarks: %s → %s\n", humanize.MarkdownCode(r.Old), humanize.MarkdownCode(r.New))
	if len(r.Decisions) > 0 {
		fmt.Fprintf(&b, "\n**%s**\n", benchVerdict(r))
	}
	var prev []bench.ConfigValue
	for i, t := range r.Tables {
		b.WriteString("\n")
		changed := i == 0 || benchConfigKey(prev) != benchConfigKey(t.Config)
		prev = t.Config
		if changed && len(t.Config) > 0 {
			parts := make([]string, len(t.Config))
			for i, kv := range t.Config {
				parts[i] = fmt.Sprintf("**%s** %s", humanize.MarkdownText(kv.Key), humanize.MarkdownCode(kv.Value))
			}
			b.WriteString(strings.Join(parts, " · ") + "\n\n")
		}
		var notes footnotes
		fmt.Fprintf(&b, "| %s | %s | %s | vs base |\n|:--|--:|--:|:--|\n", humanize.MarkdownText(t.Unit), humanize.MarkdownText(r.Old), humanize.MarkdownText(r.New))
		for _, row := range benchRows(r, t, &notes) {
			cells := make([]string, len(row))
			for i, c := range row {
				cells[i] = humanize.MarkdownText(fmt.Sprint(c))
			}
			if row[3] != "" && !strings.HasPrefix(cells[3], "~") && !strings.HasPrefix(cells[3], "?") && cells[0] != "geomean" {
				delta, rest, _ := strings.Cut(cells[3], " ")
				cells[3] = strings.TrimSpace("**" + delta + "** " + rest)
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
		}
		for i, n := range notes.list {
			fmt.Fprintf(&b, "\n%s %s", superscript(i+1), humanize.MarkdownText(n))
		}
		if len(notes.list) > 0 {
			b.WriteString("\n")
		}
	}
	if len(r.Decisions) > 0 {
		fmt.Fprintf(&b, "\n### Gates (alpha %v)\n\n| result | gate | benchmark | why |\n|:--|:--|:--|:--|\n", r.Alpha)
		for _, d := range r.Decisions {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", outcomeMark(d.Outcome), humanize.MarkdownCode(d.Gate), humanize.MarkdownText(benchmarkLabel(r, d.Benchmark, d.Config)), humanize.MarkdownText(d.Reason))
		}
	}
	for _, a := range r.Attributions {
		fmt.Fprintf(&b, "\n### %s\n\n", humanize.MarkdownText(attributionHeading(r, a)))
		if a.Err != "" {
			b.WriteString(humanize.MarkdownText(a.Err) + "\n")
			continue
		}
		if len(a.Sites) == 0 {
			b.WriteString("No allocation site changed by more than the noise floor.\n")
			continue
		}
		b.WriteString("| bytes/op | old → new | objects/op | old → new | site | function |\n|--:|--:|--:|--:|:--|:--|\n")
		for _, s := range a.Sites {
			row := siteRow(s)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", row[0], row[1], row[2], row[3], humanize.MarkdownCode(fmt.Sprint(row[4])), humanize.MarkdownCode(fmt.Sprint(row[5])))
		}
	}
	for _, p := range []struct {
		title string
		errs  []error
	}{{"Warnings", r.Warnings}, {"Errors", r.Errors}} {
		if len(p.errs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n", p.title)
		for _, e := range p.errs {
			fmt.Fprintf(&b, "- %s\n", humanize.MarkdownText(e.Error()))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// rowScale is the scale a row's old and new figures are shown on: one
// for both, so that they read side by side.
func rowScale(row bench.Row, class benchunit.Class) benchunit.Scaler {
	var centers []float64
	for _, s := range []*bench.Summary{row.Old, row.New} {
		if s != nil {
			centers = append(centers, s.Center)
		}
	}
	return benchunit.CommonScale(centers, class)
}

// summaryText is a summary's center on the scale, ± its range.
func summaryText(scaler benchunit.Scaler, s *bench.Summary) string {
	return scaler.Format(s.Center) + " ± " + s.Range
}

// tableRows lays out a table's rows and its geomean: name, old, new, delta.
func benchRows(r *bench.Report, t bench.Table, notes *footnotes) []table.Row {
	class := benchunit.ClassOf(t.Unit)
	var rows []table.Row
	for _, row := range t.Rows {
		scaler := rowScale(row, class)
		cellOf := func(s *bench.Summary) string {
			if s == nil {
				return ""
			}
			return notes.mark(summaryText(scaler, s), s.Warnings)
		}
		delta := ""
		if row.Delta != nil {
			delta = notes.mark(row.Delta.Text+" ("+row.Delta.Stat()+")", row.Delta.Warnings)
		}
		name := notes.mark(row.Name, row.Warnings)
		rows = append(rows, table.Row{name, cellOf(row.Old), cellOf(row.New), delta})
	}
	if g := t.Geomean; g != nil {
		cell := func(ok bool, v float64) string {
			if !ok {
				return ""
			}
			return benchunit.Scale(v, class)
		}
		ratio := "?"
		if g.HasRatio {
			ratio = fmt.Sprintf("%+.2f%%", (g.Ratio-1)*100)
		}
		rows = append(rows, table.Row{notes.mark("geomean", g.Warnings), cell(g.HasOld, g.Old), cell(g.HasNew, g.New), ratio})
	}
	return rows
}

// footnotes numbers warnings as benchstat does: one superscript per
// distinct message, listed under the table.
type footnotes struct {
	list []string
}

func (f *footnotes) mark(s string, warnings []error) string {
	for _, w := range warnings {
		msg := w.Error()
		i := 0
		for i < len(f.list) && f.list[i] != msg {
			i++
		}
		if i == len(f.list) {
			f.list = append(f.list, msg)
		}
		s += " " + superscript(i+1)
	}
	return s
}

func superscript(i int) string {
	const digits = "⁰¹²³⁴⁵⁶⁷⁸⁹"
	d := []rune(digits)
	var out []rune
	for ; i > 0; i /= 10 {
		out = append([]rune{d[i%10]}, out...)
	}
	return string(out)
}

// benchmarkLabel names a benchmark, with the configuration values that
// tell its table apart from the others when there are several.
func benchmarkLabel(r *bench.Report, name string, config []bench.ConfigValue) string {
	var varying []string
	for _, kv := range config {
		for _, t := range r.Tables {
			if benchConfigValue(t.Config, kv.Key) != kv.Value {
				v := kv.Value
				if kv.Key == "pkg" {
					v = path.Base(v)
				}
				varying = append(varying, v)
				break
			}
		}
	}
	if len(varying) == 0 {
		return name
	}
	return name + " (" + strings.Join(varying, ", ") + ")"
}

func benchVerdict(r *bench.Report) string {
	fails, warns := 0, 0
	for _, d := range r.Decisions {
		switch d.Outcome {
		case gate.Fail:
			fails++
		case gate.Warn:
			warns++
		}
	}
	s := fmt.Sprintf("%d of %d gate %s failed", fails, len(r.Decisions), pluralWord(len(r.Decisions), "decision", "decisions"))
	if fails == 0 {
		s = fmt.Sprintf("no gate failed (%d %s)", len(r.Decisions), pluralWord(len(r.Decisions), "decision", "decisions"))
	}
	if warns > 0 {
		s += fmt.Sprintf("; %d %s beyond the threshold but not significant: more runs would decide", warns, pluralWord(warns, "change is", "changes are"))
	}
	return s
}

func siteRow(s bench.SiteDelta) table.Row {
	return table.Row{
		signedBytes(s.NewBytes - s.OldBytes),
		humanize.Bytes(s.OldBytes) + " → " + humanize.Bytes(s.NewBytes),
		signedCount(s.NewObjects - s.OldObjects),
		humanize.Count(s.OldObjects) + " → " + humanize.Count(s.NewObjects),
		s.Location(),
		humanize.ShortFunction(s.Function),
	}
}

func writeProblems(b *strings.Builder, word string, errs []error) {
	if len(errs) == 0 {
		return
	}
	b.WriteString("\n")
	for _, e := range errs {
		fmt.Fprintf(b, "%s: %v\n", word, e)
	}
}

// benchTable is plainTable with benchstat's spacing: no padding on the
// left, three spaces between columns.
func benchTable() table.Writer {
	tw := plainTable()
	tw.Style().Box.PaddingLeft = ""
	tw.Style().Box.PaddingRight = "   "
	return tw
}

// attributionHeading says whose allocations an attribution lists and
// why.
func attributionHeading(r *bench.Report, a bench.Attribution) string {
	s := "where " + benchmarkLabel(r, a.Benchmark, a.Config) + " allocates"
	if len(a.Regressed) > 0 {
		s += " (" + strings.Join(a.Regressed, ", ") + ")"
	}
	if a.Iters > 0 {
		s += fmt.Sprintf(", per op over %d iterations of each side with -memprofile", a.Iters)
	}
	return s
}

// benchConfigValue returns the value of a configuration key, or "".
func benchConfigValue(c []bench.ConfigValue, key string) string {
	for _, kv := range c {
		if kv.Key == key {
			return kv.Value
		}
	}
	return ""
}

// benchConfigKey is a configuration as one comparable string.
func benchConfigKey(c []bench.ConfigValue) string {
	var b strings.Builder
	for _, kv := range c {
		b.WriteString(kv.Key + "\x00" + kv.Value + "\x00")
	}
	return b.String()
}

// pluralWord picks the word for n.
func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
