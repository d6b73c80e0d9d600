package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/result"
)

// Format is an output format of the renderers.
type Format string

// The formats every command's --format takes.
const (
	FormatText     Format = "text"
	FormatJSON     Format = "json"
	FormatMarkdown Format = "markdown"
)

// ParseFormat checks a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatText, FormatJSON, FormatMarkdown:
		return f, nil
	case "md":
		return FormatMarkdown, nil
	}
	return "", fmt.Errorf("format %q is not one of text, json, markdown", s)
}

// Top writes a table of top sites in the format.
func Top(w io.Writer, t result.TopTable, f Format) error {
	switch f {
	case FormatJSON:
		return writeJSON(w, t)
	case FormatMarkdown:
		_, err := fmt.Fprintf(w, "%s\n\n%s\n", topHeading(t), sitesTable(t, 0).RenderMarkdown())
		return err
	default:
		_, err := fmt.Fprintf(w, "%s\n%s", topHeading(t), indent(sitesTable(t, 0).Render(), ""))
		return err
	}
}

func topHeading(t result.TopTable) string {
	s := fmt.Sprintf("%s: total %s", t.SampleType, humanize.Value(t.Total, t.Unit))
	if t.Semantics != "" {
		s += " — " + t.Semantics
	}
	return s
}

// sitesTable lays out up to n sites (all when n ≤ 0).
func sitesTable(t result.TopTable, n int) table.Writer {
	tw := table.NewWriter()
	style := table.StyleDefault
	style.Options = table.OptionsNoBordersAndSeparators
	style.Format.Header = text.FormatDefault
	tw.SetStyle(style)
	tw.AppendHeader(table.Row{"flat", "flat%", "cum", "cum%", "function", "location"})
	tw.SetColumnConfigs([]table.ColumnConfig{
		{Number: 1, Align: text.AlignRight, AlignHeader: text.AlignRight},
		{Number: 2, Align: text.AlignRight, AlignHeader: text.AlignRight},
		{Number: 3, Align: text.AlignRight, AlignHeader: text.AlignRight},
		{Number: 4, Align: text.AlignRight, AlignHeader: text.AlignRight},
	})
	for i, s := range t.Sites {
		if n > 0 && i == n {
			break
		}
		fn := humanize.ShortFunction(s.Function)
		if len(s.Inlined) > 1 {
			fn += " (inlined in " + humanize.ShortFunction(s.Inlined[len(s.Inlined)-1]) + ")"
		}
		tw.AppendRow(table.Row{
			humanize.Value(s.Flat, t.Unit), humanize.Percent(s.FlatShare),
			humanize.Value(s.Cum, t.Unit), humanize.Percent(s.CumShare),
			fn, humanize.Location(s.File, s.Line),
		})
	}
	return tw
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(prefix+l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}
