package load

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"os"
	"strings"
)

// Limits of a targets file.
const (
	maxTargets      = 1_000_000
	maxTargetsLine  = 64 << 10
	maxTargetsBody  = 64 << 20
	maxTargetsTotal = 1 << 30 // bodies of all targets together
)

// ParseTargets reads requests in vegeta's http format: one request per
// block,
//
//	METHOD URL
//	Header-Name: value
//	@path/to/body
//
// a request line, optional header lines, and an optional body line naming a
// file (relative to the working directory, as vegeta reads it) that ends
// the block. Blocks are separated by blank lines or start at the next
// request line; lines starting with # are comments.
//
// Each request starts from defaults (the -H and --body of the command
// line): its own header lines replace the default fields of the same name,
// its @body replaces the default body. A URL that is a path (it starts with
// /) is appended to defaults.URL, without its trailing slashes. readFile
// reads the body files; nil means os.ReadFile.
//
// Errors name the line: "targets line 7: header "X" has no colon".
func ParseTargets(r io.Reader, defaults Request, readFile ReadFileFunc) ([]Request, error) {
	base := strings.TrimRight(defaults.URL, "/")
	if readFile == nil {
		readFile = os.ReadFile
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxTargetsLine)
	var (
		reqs      []Request
		cur       *Request        // the request whose header or body lines follow
		own       map[string]bool // the header fields cur set itself
		bodyBytes int
		n         int
	)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("targets line %d: %s", n, fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			cur = nil
			continue
		case strings.HasPrefix(line, "#"):
			continue
		}
		if method, rawURL, ok := requestLine(line); ok {
			if len(reqs) == maxTargets {
				return nil, fail("more than %d requests", maxTargets)
			}
			if strings.HasPrefix(rawURL, "/") {
				if base == "" {
					return nil, fail("URL %q is a path: give an absolute URL, or a base URL for paths", clip(rawURL))
				}
				rawURL = base + rawURL
			}
			req := Request{Method: method, URL: rawURL, Header: defaults.Header.Clone(), Body: defaults.Body}
			if _, _, err := compileURL(rawURL, func(string) ([]byte, error) { return []byte("x"), nil }); err != nil {
				return nil, fail("%v", err)
			}
			if err := validMethod(method); err != nil {
				return nil, fail("method %q: %v", method, err)
			}
			reqs = append(reqs, req)
			cur, own = &reqs[len(reqs)-1], map[string]bool{}
			continue
		}
		if cur == nil {
			return nil, fail("%q: want a request line \"METHOD URL\"", clip(line))
		}
		if path, ok := strings.CutPrefix(line, "@"); ok {
			if path == "" {
				return nil, fail("@ without a file name")
			}
			data, err := readFile(path)
			if err != nil {
				return nil, fail("read body: %v", err)
			}
			if len(data) > maxTargetsBody {
				return nil, fail("body file %s is larger than %d bytes", path, maxTargetsBody)
			}
			if bodyBytes += len(data); bodyBytes > maxTargetsTotal {
				return nil, fail("bodies larger than %d bytes in all", maxTargetsTotal)
			}
			cur.Body = data
			cur = nil // a body ends the block
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok {
			return nil, fail("header %q has no colon: want \"Name: value\"", clip(line))
		}
		if err := validHeader(name, []string{value}); err != nil {
			return nil, fail("%v", err)
		}
		if cur.Header == nil {
			cur.Header = http.Header{}
		}
		key := textproto.CanonicalMIMEHeaderKey(name)
		if !own[key] {
			cur.Header.Del(key) // an inherited field, replaced
			own[key] = true
		}
		cur.Header.Add(key, value)
	}
	if err := sc.Err(); err != nil {
		n++
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fail("longer than %d bytes", maxTargetsLine)
		}
		return nil, fmt.Errorf("read targets: %w", err)
	}
	if len(reqs) == 0 {
		return nil, errors.New("targets: no requests: want lines like \"GET http://127.0.0.1:8080/path\"")
	}
	return reqs, nil
}

// requestLine splits "METHOD URL" when line is one: an upper-case word,
// blanks, and one more field.
func requestLine(line string) (method, rawURL string, ok bool) {
	fields := strings.Fields(line)
	if len(fields) != 2 || !isUpperWord(fields[0]) {
		return "", "", false
	}
	return fields[0], fields[1], true
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 60
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
