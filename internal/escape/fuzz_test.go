package escape

import (
	"strings"
	"testing"
)

// FuzzParse feeds Parse arbitrary compiler output: it must not panic, and
// every note it keeps must be findable again by its own file and line.
func FuzzParse(f *testing.F) {
	f.Add("a.go:1:2: x escapes to heap in F:\na.go:1:2:   flow: {heap} ← x:\n")
	f.Add("./b.go:3:4: moved to heap: u\n# pkg\nb.go:5:6: make([]int, 8) does not escape\n")
	f.Add("c.go:0:0: escapes to heap\nc.go:-1:1: moved to heap: v\n.go:: \n")
	f.Fuzz(func(t *testing.T, in string) {
		rep, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		n := 0
		for _, notes := range rep.notes {
			for _, note := range notes {
				n++
				if len(rep.Notes(note.File, note.Line)) == 0 {
					t.Fatalf("note %+v not found by its own position", note)
				}
				if len(note.Flow) > maxFlow {
					t.Fatalf("note keeps %d flow lines", len(note.Flow))
				}
			}
		}
		if n != rep.Len() {
			t.Fatalf("Len = %d, notes = %d", rep.Len(), n)
		}
	})
}
