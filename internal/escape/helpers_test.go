package escape

import (
	"fmt"
	"sort"
	"strings"
)

// dump lists every note of the report, sorted by position: the golden form.
func (r *Report) dump() string {
	var notes []Note
	for _, ns := range r.notes {
		notes = append(notes, ns...)
	}
	sort.Slice(notes, func(i, j int) bool {
		a, b := notes[i], notes[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Kind < b.Kind
	})
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d notes\n", r.Len())
	for _, n := range notes {
		fmt.Fprintf(&sb, "%s:%d:%d %s [%s] %s\n", n.File, n.Line, n.Column, n.Kind, n.Function, n.Message)
		for _, f := range n.Flow {
			fmt.Fprintf(&sb, "    %s\n", f)
		}
	}
	return sb.String()
}
