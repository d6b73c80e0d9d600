package escape

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
)

// maxFlow bounds the flow lines kept per note: the first lines say where
// the value goes, the rest repeat the path through callees.
const maxFlow = 8

// Kind says what the compiler concluded about a value.
type Kind int

const (
	// Escapes: an expression's storage is allocated on the heap
	// ("make([]byte, n) escapes to heap").
	Escapes Kind = iota
	// Moved: a variable is moved to the heap ("moved to heap: u").
	Moved
	// NoEscape: the value stays on the stack ("… does not escape").
	NoEscape
)

// String returns the kind as the compiler words it.
func (k Kind) String() string {
	switch k {
	case Escapes:
		return "escapes to heap"
	case Moved:
		return "moved to heap"
	case NoEscape:
		return "does not escape"
	}
	return "unknown"
}

// Note is one verdict of the compiler at a source position.
type Note struct {
	// File is the source file as the compiler printed it, cleaned and
	// slash-separated: relative to the directory the build ran in, or
	// absolute for files outside it.
	File   string
	Line   int
	Column int
	Kind   Kind
	// Message is the verdict, e.g. "make([]byte, n) escapes to heap".
	Message string
	// Function is the function the value belongs to, when -m=2 says so.
	Function string
	// Flow is the compiler's explanation: "flow: ~r0 ← &u" and the "from …"
	// steps under it, at most maxFlow lines.
	Flow []string
}

// String renders the note on one line: the verdict, then its flow, with
// the positions in the flow shortened to file base names.
func (n Note) String() string {
	if len(n.Flow) == 0 {
		return n.Message
	}
	steps := make([]string, len(n.Flow))
	for i, f := range n.Flow {
		steps[i] = strings.TrimSuffix(shortenAt(f), ":")
	}
	return n.Message + ": " + strings.Join(steps, "; ")
}

// shortenAt turns "from x (assign) at dir/file.go:38:14" into
// "from x (assign) at file.go:38:14".
func shortenAt(step string) string {
	i := strings.LastIndex(step, " at ")
	if i < 0 {
		return step
	}
	return step[:i+4] + path.Base(step[i+4:])
}

// lineKey identifies a source line by file base name and line number; the
// full path is compared when looking up.
type lineKey struct {
	base string
	line int
}

// Report holds the heap verdicts of one analysis, indexed by line.
type Report struct {
	notes map[lineKey][]Note
	count int
}

// Len returns the number of notes in the report.
func (r *Report) Len() int { return r.count }

// Notes returns the verdicts for a source line, heap ones (escapes, moved)
// before "does not escape", in column order. file may be absolute, relative
// to the module, or a -trimpath module path: it matches a note whose file is
// a path suffix of it (or the other way round).
func (r *Report) Notes(file string, line int) []Note {
	if r == nil {
		return nil
	}
	file = path.Clean(strings.ReplaceAll(file, `\`, "/"))
	var out []Note
	for _, n := range r.notes[lineKey{path.Base(file), line}] {
		if sameFile(file, n.File) {
			out = append(out, n)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Column < out[j].Column
	})
	return out
}

// At returns the verdicts for a source line as one-line texts (see
// [Note.String]): the form a finding shows.
func (r *Report) At(file string, line int) []string {
	notes := r.Notes(file, line)
	out := make([]string, len(notes))
	for i, n := range notes {
		out[i] = n.String()
	}
	return out
}

// sameFile reports whether two cleaned slash paths name the same file, one
// being a suffix of the other at a path boundary.
func sameFile(a, b string) bool {
	b = strings.TrimPrefix(b, "./")
	a = strings.TrimPrefix(a, "./")
	if len(a) < len(b) {
		a, b = b, a
	}
	return a == b || strings.HasSuffix(a, "/"+b)
}

// Parse reads the compiler's -m=2 output and keeps the notes that say
// whether a value is heap-allocated. Lines it does not recognise (package
// headers, inlining decisions, build errors) are skipped; Parse fails only
// when reading fails.
func Parse(r io.Reader) (*Report, error) {
	rep := &Report{notes: make(map[lineKey][]Note)}
	// seen dedupes the short summary line -m prints after the detailed
	// "… in F:" header of -m=2.
	// "… in F:" header of -m=2; whichever comes first, the note keeps the
	// function and the flow.
	seen := make(map[string]int)
	var cur *Note
	flush := func() {
		if cur == nil {
			return
		}
		k := lineKey{path.Base(cur.File), cur.Line}
		id := fmt.Sprintf("%s:%d:%d:%d", cur.File, cur.Line, cur.Column, cur.Kind)
		if i, ok := seen[id]; ok {
			if prev := &rep.notes[k][i]; len(prev.Flow) < len(cur.Flow) {
				*prev = *cur
			}
		} else {
			seen[id] = len(rep.notes[k])
			rep.notes[k] = append(rep.notes[k], *cur)
			rep.count++
		}
		cur = nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		file, line, col, text, ok := splitPosition(sc.Text())
		if !ok {
			flush()
			continue
		}
		if strings.HasPrefix(text, " ") {
			// A flow line of the note above (same position, indented).
			if cur != nil && cur.File == file && cur.Line == line && cur.Column == col && len(cur.Flow) < maxFlow {
				cur.Flow = append(cur.Flow, strings.TrimSpace(text))
			}
			continue
		}
		flush()
		n, ok := verdict(text)
		if !ok {
			continue
		}
		n.File, n.Line, n.Column = file, line, col
		cur = &n
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read escape analysis output: %w", err)
	}
	return rep, nil
}

// splitPosition splits "file.go:12:3: text" into its parts.
func splitPosition(s string) (file string, line, col int, text string, ok bool) {
	i := strings.Index(s, ".go:")
	if i < 0 {
		return "", 0, 0, "", false
	}
	file, rest := s[:i+3], s[i+4:]
	lineStr, rest, ok1 := strings.Cut(rest, ":")
	colStr, rest, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || !strings.HasPrefix(rest, " ") {
		return "", 0, 0, "", false
	}
	line, err1 := strconv.Atoi(lineStr)
	col, err2 := strconv.Atoi(colStr)
	if err1 != nil || err2 != nil || line <= 0 {
		return "", 0, 0, "", false
	}
	return path.Clean(strings.ReplaceAll(file, `\`, "/")), line, col, rest[1:], true
}

// verdict recognises the heap verdicts among the compiler's messages.
func verdict(text string) (Note, bool) {
	switch {
	case strings.HasPrefix(text, "moved to heap: "):
		return Note{Kind: Moved, Message: text}, true
	case strings.Contains(text, " escapes to heap"):
		msg, fn := text, ""
		if i := strings.Index(text, " escapes to heap in "); i >= 0 {
			msg = text[:i] + " escapes to heap"
			fn = strings.TrimSuffix(text[i+len(" escapes to heap in "):], ":")
		} else if !strings.HasSuffix(text, " escapes to heap") && !strings.HasSuffix(text, " escapes to heap:") {
			return Note{}, false
		}
		return Note{Kind: Escapes, Message: strings.TrimSuffix(msg, ":"), Function: fn}, true
	case strings.HasSuffix(text, " does not escape"):
		return Note{Kind: NoEscape, Message: text}, true
	}
	return Note{}, false
}
