package report

import (
	"fmt"
	"io"

	"github.com/jedib0t/go-pretty/v6/table"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/result"
)

// Top is a table of top sites (heapscope top), in text, Markdown or
// JSON.
type Top struct {
	Table result.TopTable
}

// Formats lists Top's formats.
func (Top) Formats() []Format { return textFormats }

func (t Top) data() any { return t.Table }

func (t Top) render(w io.Writer, f Format) error {
	if f == FormatMarkdown {
		_, err := fmt.Fprintf(w, "%s\n\n%s\n", topHeading(t.Table), sitesTable(t.Table, 0).RenderMarkdown())
		return err
	}
	_, err := fmt.Fprintf(w, "%s\n%s", topHeading(t.Table), indent(sitesTable(t.Table, 0).Render(), ""))
	return err
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
	tw := plainTable()
	tw.AppendHeader(table.Row{"flat", "flat%", "cum", "cum%", "function", "location"})
	rightAlign(tw, 1, 4)
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

// indent prefixes every line of s.
