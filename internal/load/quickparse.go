package load

import "bytes"

// The event loops read most responses with parseQuick rather than with
// fasthttp: the usual answer of a service (HTTP/1.1, a status that has a
// body, a Content-Length, a few plain headers) is parsed where it lies in
// the connection's buffer, with no copy into a bufio.Reader, no header
// stored and nothing parsed twice when the body comes in several reads.
// That took the parsing from about 0.8 µs to 0.1 µs a response. Anything
// else goes to fasthttp, which parses it as before: parseQuick accepts a
// subset of what fasthttp accepts and reads it the same way (FuzzParseQuick
// holds it to that).

// quickResult is what parseQuick made of a buffer.
type quickResult int

const (
	// quickOther: the buffer holds something parseQuick leaves to
	// fasthttp (or not yet all of the header).
	quickOther quickResult = iota
	// quickMore: a response parseQuick reads, whose body has not all
	// arrived.
	quickMore
	// quickDone: a whole response.
	quickDone
)

// quickHeaderMax is the largest header parseQuick reads, well within what
// fasthttp reads through a bufio.Reader of readBufferSize.
const quickHeaderMax = readBufferSize / 2

// parseQuick parses the response at the start of b, whose body may be at
// most maxBody bytes. With quickDone it returns the response's length in b,
// its status and whether the server closes the connection after it.
func parseQuick(b []byte, maxBody int) (res quickResult, n, status int, closing bool) {
	if !bytes.HasPrefix(b, http11) {
		return quickOther, 0, 0, false
	}
	h := b[:min(len(b), quickHeaderMax)]
	// The status line: "HTTP/1.1 ddd reason" or "HTTP/1.1 ddd".
	line, i := nextLine(h, len(http11))
	if i < 0 || len(line) < 3 || len(line) > 3 && line[3] != ' ' || !plainText(line) {
		return quickOther, 0, 0, false
	}
	for _, c := range line[:3] {
		if c < '0' || c > '9' {
			return quickOther, 0, 0, false
		}
		status = status*10 + int(c-'0')
	}
	if status < 200 || status == 204 || status == 304 {
		// No body, or an interim response: fasthttp knows what follows.
		return quickOther, 0, 0, false
	}
	// The header lines, to the empty one. Each ends in CRLF and holds no
	// other CR or LF, so the empty line ends the first CRLFCRLF, where
	// fasthttp ends the header too.
	length := -1
	for {
		if line, i = nextLine(h, i); i < 0 {
			return quickOther, 0, 0, false
		}
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !tokenText(line[:colon]) {
			return quickOther, 0, 0, false
		}
		name, value := line[:colon], trimBlanks(line[colon+1:])
		if !plainText(value) {
			return quickOther, 0, 0, false
		}
		switch {
		case lowerIs(name, "content-length"):
			if length >= 0 || len(value) == 0 || len(value) > 18 {
				return quickOther, 0, 0, false
			}
			length = 0
			for _, c := range value {
				if c < '0' || c > '9' {
					return quickOther, 0, 0, false
				}
				length = length*10 + int(c-'0')
			}
		case lowerIs(name, "connection"):
			switch {
			case lowerIs(value, "close"):
				closing = true
			case !lowerIs(value, "keep-alive"):
				return quickOther, 0, 0, false
			}
		case lowerIs(name, "transfer-encoding"), lowerIs(name, "trailer"):
			return quickOther, 0, 0, false
		}
	}
	if length < 0 || length > maxBody {
		return quickOther, 0, 0, false
	}
	n = i + length
	if len(b) < n {
		return quickMore, 0, 0, false
	}
	return quickDone, n, status, closing
}

// nextLine returns the line of b that starts at i, without its CRLF, and
// where the next one starts; -1 when the line does not end in CRLF.
func nextLine(b []byte, i int) ([]byte, int) {
	e := bytes.IndexByte(b[i:], '\n')
	if e < 1 || b[i+e-1] != '\r' {
		return nil, -1
	}
	return b[i : i+e-1], i + e + 1
}

// trimBlanks trims the spaces and tabs around b.
func trimBlanks(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// lowerIs reports whether b, printable ASCII, is lower (lower-case letters
// and '-') but for case.
func lowerIs(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if c|0x20 != lower[i] {
			return false
		}
	}
	return true
}

var http11 = []byte("HTTP/1.1 ")

// plainText reports whether b holds only printable ASCII and tabs.
func plainText(b []byte) bool {
	for _, c := range b {
		if (c < ' ' || c > '~') && c != '\t' {
			return false
		}
	}
	return true
}

// tokenText reports whether b holds only the characters of an HTTP token
// (RFC 9110, section 5.6.2).
func tokenText(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || !isToken[c] {
			return false
		}
	}
	return true
}

var isToken = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()
