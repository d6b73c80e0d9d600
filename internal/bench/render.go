package bench

import (
	"fmt"
	"io"
	"math"
	"path"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
	"golang.org/x/perf/benchunit"

	"github.com/heapscope/heapscope/internal/gate"
	"github.com/heapscope/heapscope/internal/humanize"
)

// WriteText writes the report as a benchstat-like table per file
// configuration and unit, then the gates' decisions, the attributions and
// the warnings.
func WriteText(w io.Writer, r *Report) error {
	var b strings.Builder
	var prev []ConfigValue
	for i, t := range r.Tables {
		if i > 0 {
			b.WriteString("\n")
		}
		for _, kv := range t.Config {
			if i == 0 || configGet(prev, kv.Key) != kv.Value {
				fmt.Fprintf(&b, "%s: %s\n", kv.Key, kv.Value)
			}
		}
		prev = t.Config
		var notes footnotes
		tw := newTextTable()
		tw.SetColumnConfigs([]table.ColumnConfig{
			{Number: 2, Align: text.AlignRight, AlignHeader: text.AlignRight},
			{Number: 3, Align: text.AlignRight, AlignHeader: text.AlignRight},
		})
		tw.AppendHeader(table.Row{t.Unit, r.Old, r.New, "vs base"})
		for _, row := range tableRows(r, t, &notes) {
			tw.AppendRow(row)
		}
		b.WriteString(trimLines(tw.Render()))
		for i, n := range notes.list {
			fmt.Fprintf(&b, "%s %s\n", superscript(i+1), n)
		}
	}
	if len(r.Decisions) > 0 {
		fmt.Fprintf(&b, "\ngates (alpha %v):\n", r.Alpha)
		tw := newTextTable()
		for _, d := range r.Decisions {
			tw.AppendRow(table.Row{outcomeWord(d.Outcome), d.Gate, r.benchmarkLabel(d.Benchmark, d.Config), d.Reason})
		}
		b.WriteString(trimLines(indentLines(tw.Render(), "  ")))
		b.WriteString(verdict(r) + "\n")
	}
	for _, a := range r.Attributions {
		b.WriteString("\n" + a.heading(r) + ":\n")
		if a.Err != "" {
			fmt.Fprintf(&b, "  %s\n", a.Err)
			continue
		}
		if len(a.Sites) == 0 {
			b.WriteString("  no allocation site changed by more than the noise floor\n")
			continue
		}
		tw := newTextTable()
		tw.AppendHeader(table.Row{"bytes/op", "old → new", "objects/op", "old → new", "site", "function"})
		for _, s := range a.Sites {
			tw.AppendRow(siteRow(s))
		}
		b.WriteString(trimLines(indentLines(tw.Render(), "  ")))
	}
	writeProblems(&b, "warning", r.Warnings)
	writeProblems(&b, "error", r.Errors)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the report as Markdown, ready to paste into a pull
// request.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## Benchmarks: %s → %s\n", humanize.MarkdownCode(r.Old), humanize.MarkdownCode(r.New))
	if len(r.Decisions) > 0 {
		fmt.Fprintf(&b, "\n**%s**\n", verdict(r))
	}
	var prev []ConfigValue
	for i, t := range r.Tables {
		b.WriteString("\n")
		changed := i == 0 || configKey(prev) != configKey(t.Config)
		prev = t.Config
		if changed && len(t.Config) > 0 {
			parts := make([]string, len(t.Config))
			for i, kv := range t.Config {
				parts[i] = fmt.Sprintf("**%s** %s", mdEscape(kv.Key), humanize.MarkdownCode(kv.Value))
			}
			b.WriteString(strings.Join(parts, " · ") + "\n\n")
		}
		var notes footnotes
		fmt.Fprintf(&b, "| %s | %s | %s | vs base |\n|:--|--:|--:|:--|\n", mdEscape(t.Unit), mdEscape(r.Old), mdEscape(r.New))
		for _, row := range tableRows(r, t, &notes) {
			cells := make([]string, len(row))
			for i, c := range row {
				cells[i] = mdEscape(fmt.Sprint(c))
			}
			if row[3] != "" && !strings.HasPrefix(cells[3], "~") && !strings.HasPrefix(cells[3], "?") && cells[0] != "geomean" {
				delta, rest, _ := strings.Cut(cells[3], " ")
				cells[3] = strings.TrimSpace("**" + delta + "** " + rest)
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
		}
		for i, n := range notes.list {
			fmt.Fprintf(&b, "\n%s %s", superscript(i+1), mdEscape(n))
		}
		if len(notes.list) > 0 {
			b.WriteString("\n")
		}
	}
	if len(r.Decisions) > 0 {
		fmt.Fprintf(&b, "\n### Gates (alpha %v)\n\n| result | gate | benchmark | why |\n|:--|:--|:--|:--|\n", r.Alpha)
		for _, d := range r.Decisions {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", outcomeMark(d.Outcome), humanize.MarkdownCode(d.Gate), mdEscape(r.benchmarkLabel(d.Benchmark, d.Config)), mdEscape(d.Reason))
		}
	}
	for _, a := range r.Attributions {
		fmt.Fprintf(&b, "\n### %s\n\n", mdEscape(a.heading(r)))
		if a.Err != "" {
			b.WriteString(mdEscape(a.Err) + "\n")
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
			fmt.Fprintf(&b, "- %s\n", mdEscape(e.Error()))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// tableRows lays out a table's rows and its geomean: name, old, new, delta.
func tableRows(r *Report, t Table, notes *footnotes) []table.Row {
	class := benchunit.ClassOf(t.Unit)
	var rows []table.Row
	for _, row := range t.Rows {
		var centers []float64
		for _, s := range []*Summary{row.Old, row.New} {
			if s != nil {
				centers = append(centers, s.Center)
			}
		}
		scaler := benchunit.CommonScale(centers, class)
		cellOf := func(s *Summary) string {
			if s == nil {
				return ""
			}
			return notes.mark(scaler.Format(s.Center)+" ± "+s.Range, s.Warnings)
		}
		delta := ""
		if row.Delta != nil {
			delta = notes.mark(row.Delta.Text+" ("+statString(row.Delta)+")", row.Delta.Warnings)
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
func (r *Report) benchmarkLabel(name string, config []ConfigValue) string {
	var varying []string
	for _, kv := range config {
		for _, t := range r.Tables {
			if configGet(t.Config, kv.Key) != kv.Value {
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

func verdict(r *Report) string {
	fails, warns := 0, 0
	for _, d := range r.Decisions {
		switch d.Outcome {
		case gate.Fail:
			fails++
		case gate.Warn:
			warns++
		}
	}
	s := fmt.Sprintf("%d of %d gate %s failed", fails, len(r.Decisions), plural(len(r.Decisions), "decision", "decisions"))
	if fails == 0 {
		s = fmt.Sprintf("no gate failed (%d %s)", len(r.Decisions), plural(len(r.Decisions), "decision", "decisions"))
	}
	if warns > 0 {
		s += fmt.Sprintf("; %d %s beyond the threshold but not significant: more runs would decide", warns, plural(warns, "change is", "changes are"))
	}
	return s
}

func outcomeWord(o gate.Outcome) string {
	switch o {
	case gate.Fail:
		return "FAIL"
	case gate.Warn:
		return "WARN"
	}
	return "pass"
}

func outcomeMark(o gate.Outcome) string {
	switch o {
	case gate.Fail:
		return "❌ fail"
	case gate.Warn:
		return "⚠️ warn"
	}
	return "✅ pass"
}

func siteRow(s SiteDelta) table.Row {
	return table.Row{
		signedBytes(s.NewBytes - s.OldBytes),
		formatBytes(s.OldBytes) + " → " + formatBytes(s.NewBytes),
		signedCount(s.NewObjects - s.OldObjects),
		formatCount(s.OldObjects) + " → " + formatCount(s.NewObjects),
		s.Location(),
		shortFunction(s.Function),
	}
}

func formatBytes(v float64) string {
	if v == 0 {
		return "0B"
	}
	return benchunit.Scale(v, benchunit.Binary) + "B"
}

func signedBytes(v float64) string {
	if v < 0 {
		return "-" + formatBytes(-v)
	}
	return "+" + formatBytes(v)
}

func formatCount(v float64) string {
	if v == 0 {
		return "0"
	}
	return benchunit.Scale(v, benchunit.Decimal)
}

func signedCount(v float64) string {
	if v < 0 {
		return "-" + formatCount(-v)
	}
	return "+" + formatCount(v)
}

// shortFunction drops the import path of a function name, keeping the
// package's last element.
func shortFunction(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
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

func newTextTable() table.Writer {
	tw := table.NewWriter()
	style := table.StyleDefault
	style.Options = table.OptionsNoBordersAndSeparators
	style.Format.Header = text.FormatDefault
	style.Box.PaddingLeft = ""
	style.Box.PaddingRight = "   "
	tw.SetStyle(style)
	return tw
}

// trimLines drops the padding at the end of every line and ends the text
// with a newline.
func trimLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

func indentLines(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// mdEscape keeps text from breaking a Markdown table or turning into
// formatting.
func mdEscape(s string) string {
	r := strings.NewReplacer("|", `\|`, "*", `\*`, "`", "\\`", "<", "&lt;", ">", "&gt;", "\n", " ")
	return r.Replace(s)
}

// finite returns a pointer to v, or nil when v is not finite (JSON has no
// infinities).
func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}
