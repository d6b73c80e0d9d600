package load

import (
	"bytes"
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"strings"
)

// Template is a compiled URL template. Its placeholders are
//
//	{seq}        the request's sequence number: 0, 1, 2, … in schedule order
//	{rand:N}     a uniform integer in [0, N), N ≥ 1
//	{pick:FILE}  one of the non-blank lines of FILE, uniformly
//
// The draws of {rand:N} and {pick:FILE} are a function of the run's seed,
// the request's sequence number and the placeholder's position only, so the
// same seed gives the same URL to the same request whichever worker sends
// it, in either load model.
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
	lit    string
	op     placeholder
	at     int      // offset of the placeholder in the raw template
	arg    uint64   // the bound N of {rand:N}
	values []string // the lines of {pick:FILE}
}

type placeholder uint8

const (
	opNone placeholder = iota
	opSeq
	opRand
	opPick
)

// ReadFileFunc reads a named file, as os.ReadFile does. Templates use it for
// {pick:FILE} and targets files for @body lines.
type ReadFileFunc func(name string) ([]byte, error)

// maxPickValues bounds the lines of a {pick:FILE} file.
const maxPickValues = 10_000_000

// CompileTemplate parses the placeholders of a URL template. readFile reads
// the files of {pick:FILE} placeholders; nil means os.ReadFile.
func CompileTemplate(raw string, readFile ReadFileFunc) (*Template, error) {
	if readFile == nil {
		readFile = os.ReadFile
	}
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
		p := part{lit: raw[lit:i], at: i}
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
		case "pick":
			if !hasArg || arg == "" {
				return nil, fmt.Errorf("placeholder %s at offset %d: want {pick:FILE} with the file of values", text, i)
			}
			values, err := pickValues(arg, readFile)
			if err != nil {
				return nil, fmt.Errorf("placeholder %s at offset %d: %w", text, i, err)
			}
			p.op, p.values = opPick, values
		default:
			return nil, fmt.Errorf("unknown placeholder %s at offset %d, want {seq}, {rand:N} or {pick:FILE}", text, i)
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

// pickValues reads the values of {pick:FILE}: its non-blank lines, which
// go into URLs as they are and so must not hold blanks or control
// characters.
func pickValues(name string, readFile ReadFileFunc) ([]string, error) {
	data, err := readFile(name)
	if err != nil {
		return nil, fmt.Errorf("read values: %w", err)
	}
	var values []string
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if i := bytes.IndexFunc(line, func(r rune) bool { return r <= ' ' || r == 0x7f }); i >= 0 {
			return nil, fmt.Errorf("%s line %d: character %q cannot go into a URL as it is", name, n, line[i])
		}
		if len(values) == maxPickValues {
			return nil, fmt.Errorf("%s: more than %d values", name, maxPickValues)
		}
		values = append(values, string(line))
	}
	if len(values) == 0 {
		return nil, fmt.Errorf("%s has no values: want one per line", name)
	}
	return values, nil
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

// Expand appends the expansion of t for request number seq of a run seeded
// with seed to dst and returns the extended slice. It does not allocate when
// dst has room.
func (t *Template) Expand(dst []byte, seq, seed uint64) []byte {
	for k, p := range t.parts {
		dst = append(dst, p.lit...)
		switch p.op {
		case opSeq:
			dst = strconv.AppendUint(dst, seq, 10)
		case opRand:
			dst = strconv.AppendUint(dst, draw(seed, seq, k, p.arg), 10)
		case opPick:
			dst = append(dst, p.values[draw(seed, seq, k, uint64(len(p.values)))]...)
		}
	}
	return dst
}

// Constant reports whether t has no placeholders, so that every expansion
// is the template itself.
func (t *Template) Constant() bool {
	return t.firstPlaceholder() < 0
}

// firstPlaceholder returns the offset of the first placeholder, or -1.
func (t *Template) firstPlaceholder() int {
	for _, p := range t.parts {
		if p.op != opNone {
			return p.at
		}
	}
	return -1
}

// String returns the template as written.
func (t *Template) String() string { return t.raw }

// draw returns a uniform integer in [0, n) for placeholder k of request seq
// in a run seeded with seed: a splitmix64 stream seeded from the three,
// bounded without bias by Lemire's multiply-and-reject method.
func draw(seed, seq uint64, k int, n uint64) uint64 {
	s := mix64(mix64(seed) + seq*0x9e3779b97f4a7c15 + uint64(k)*0xd1b54a32d192ed03)
	next := func() uint64 {
		s += 0x9e3779b97f4a7c15
		return mix64(s)
	}
	hi, lo := bits.Mul64(next(), n)
	if lo < n {
		threshold := -n % n
		for lo < threshold {
			hi, lo = bits.Mul64(next(), n)
		}
	}
	return hi
}

// mix64 is the finaliser of splitmix64: a bijection that spreads every input
// bit over the output.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
