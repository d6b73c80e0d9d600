package sysmem

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Allocation-free helpers shared by the parsers. They work on byte slices
// so that no substring is turned into a string just to be read as a number.

// parseDec parses a non-empty run of decimal digits. It reports false on
// any other byte or on overflow.
func parseDec(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// parseHex parses a non-empty run of hexadecimal digits (either case). It
// reports false on any other byte or on overflow.
func parseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(d)
	}
	return n, true
}

// isSpace reports whether c is a blank the kernel uses between fields.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t'
}

// trimSpace drops leading and trailing blanks and a trailing carriage return.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && (isSpace(b[len(b)-1]) || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// nextField splits b at its first blank run: the field before it and the
// rest after it, leading blanks skipped on both.
func nextField(b []byte) (field, rest []byte) {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	i := 0
	for i < len(b) && !isSpace(b[i]) {
		i++
	}
	field, rest = b[:i], b[i:]
	for len(rest) > 0 && isSpace(rest[0]) {
		rest = rest[1:]
	}
	return field, rest
}

// parseKB parses a value of the form "1234 kB" as bytes.
func parseKB(b []byte) (uint64, bool) {
	num, unit := nextField(b)
	n, ok := parseDec(num)
	if !ok || string(trimSpace(unit)) != "kB" || n > (1<<64-1)/1024 {
		return 0, false
	}
	return n * 1024, true
}

// setKB parses val, the value of field key on line n, as a size in kB
// into *dst; a value that is not one is an error naming the line.
func setKB(dst *uint64, n int, key, val []byte) error {
	v, ok := parseKB(val)
	if !ok {
		return &SyntaxError{Line: n, Msg: fmt.Sprintf("%s: bad size %q", key, trimSpace(val))}
	}
	*dst = v
	return nil
}

// maxLine is the longest line the parsers accept. Real lines are far
// shorter: a smaps header holds at most a PATH_MAX pathname, and the
// longest status line (Groups) lists at most 65536 group ids.
const maxLine = 1 << 20

// eachLine calls fn with every line of r and its 1-based number, the line
// without its newline and only valid until fn returns. bufSize is the
// initial size of the read buffer, the only allocation. A read error, or a
// line longer than maxLine, ends the scan with an error naming the line.
func eachLine(r io.Reader, bufSize int, fn func(n int, line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, bufSize), maxLine)
	n := 0
	for sc.Scan() {
		n++
		if err := fn(n, sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &SyntaxError{Line: n + 1, Msg: "line longer than " + strconv.Itoa(maxLine) + " bytes"}
		}
		return fmt.Errorf("line %d: %w", n+1, err)
	}
	return nil
}
