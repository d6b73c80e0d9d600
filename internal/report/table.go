package report

import (
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"
)

// plainTable is the table of every text report: no borders, no
// separators, the header as written.
func plainTable() table.Writer {
	tw := table.NewWriter()
	style := table.StyleDefault
	style.Options = table.OptionsNoBordersAndSeparators
	style.Format.Header = text.FormatDefault
	tw.SetStyle(style)
	return tw
}

// rightAlign aligns tw's columns from first to last (counted from 1) to
// the right, their headers too.
func rightAlign(tw table.Writer, first, last int) {
	var cfgs []table.ColumnConfig
	for n := first; n <= last; n++ {
		cfgs = append(cfgs, table.ColumnConfig{Number: n, Align: text.AlignRight, AlignHeader: text.AlignRight})
	}
	tw.SetColumnConfigs(cfgs)
}

// indent prefixes every line of a rendered table, drops the padding at
// the end of every line and ends the text with a newline.
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(prefix+l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}
