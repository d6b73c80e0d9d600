package load

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Template is a compiled URL template. Its placeholders are
//
//	{seq}     the request's sequence number: 0, 1, 2, … in schedule order
//	{rand:N}  a uniform integer in [0, N), N ≥ 1, drawn from the run's
//	          seeded generator
//
// A brace that does not open a name followed by an optional ":argument" and
// a closing brace is literal text, so "{}" and `{"a":1}` stay as they are;
// "{name}" with any other name is an error, found when the template is
// compiled rather than per request.
type Template struct {
	raw   string
	parts []part
}

// part is literal text followed by an optional placeholder.
type part struct {
	lit string
	op  placeholder
	arg uint64 // the bound N of {rand:N}
}

type placeholder uint8

const (
	opNone placeholder = iota
	opSeq
	opRand
)

// CompileTemplate parses the placeholders of a URL template.
func CompileTemplate(raw string) (*Template, error) {
	t := &Template{raw: raw}
	lit := 0 // start of the pending literal text
	for i := 0; i < len(raw); i++ {
		if raw[i] != '{' {
			continue
		}
		end := strings.IndexByte(raw[i+1:], '}')
		if end < 0 {
			break
		}
		inner := raw[i+1 : i+1+end]
		name, arg, hasArg := strings.Cut(inner, ":")
		if !isName(name) {
			continue // a literal brace
		}
		text := raw[i : i+end+2]
		p := part{lit: raw[lit:i]}
		switch name {
		case "seq":
			if hasArg {
				return nil, fmt.Errorf("placeholder %s at offset %d: {seq} takes no argument", text, i)
			}
			p.op = opSeq
		case "rand":
			n, err := strconv.ParseUint(arg, 10, 64)
			if !hasArg || err != nil || n == 0 {
				return nil, fmt.Errorf("placeholder %s at offset %d: want {rand:N} with N an integer ≥ 1", text, i)
			}
			p.op, p.arg = opRand, n
		default:
			return nil, fmt.Errorf("unknown placeholder %s at offset %d, want {seq} or {rand:N}", text, i)
		}
		t.parts = append(t.parts, p)
		i += end + 1
		lit = i + 1
	}
	if lit < len(raw) {
		t.parts = append(t.parts, part{lit: raw[lit:]})
	}
	return t, nil
}

// isName reports whether s is a letter followed by letters, digits or
// underscores.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range []byte(s) {
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || c != '_' && (c < '0' || c > '9')) {
			return false
		}
	}
	return true
}

// Expand appends the expansion of t for request number seq to dst and
// returns the extended slice. {rand:N} placeholders draw from rnd, which may
// be nil only when t has none. Expand does not allocate when dst has room.
func (t *Template) Expand(dst []byte, seq uint64, rnd *rand.Rand) []byte {
	for _, p := range t.parts {
		dst = append(dst, p.lit...)
		switch p.op {
		case opSeq:
			dst = strconv.AppendUint(dst, seq, 10)
		case opRand:
			dst = strconv.AppendUint(dst, rnd.Uint64N(p.arg), 10)
		}
	}
	return dst
}

// Constant reports whether t has no placeholders, so that every expansion
// is the template itself.
func (t *Template) Constant() bool {
	for _, p := range t.parts {
		if p.op != opNone {
			return false
		}
	}
	return true
}

// String returns the template as written.
func (t *Template) String() string { return t.raw }
