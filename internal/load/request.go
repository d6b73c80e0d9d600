package load

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
)

// Request is the template of the requests a run sends.
type Request struct {
	// Method is the HTTP method; empty means GET.
	Method string
	// URL is the absolute http or https URL, with optional {seq} and
	// {rand:N} placeholders (see Template).
	URL string
	// Header is sent with every request. A "Host" entry sets the request's
	// Host.
	Header http.Header
	// Body is sent with every request.
	Body []byte
}

// ParseRequest parses a request given as "METHOD URL" or "URL" (GET), as
// the --load flag takes it, and validates it.
func ParseRequest(s string) (Request, error) {
	fields := strings.Fields(s)
	var r Request
	switch len(fields) {
	case 0:
		return Request{}, fmt.Errorf("parse request %q: empty, want \"METHOD URL\" or \"URL\"", s)
	case 1:
		if isUpperWord(fields[0]) {
			return Request{}, fmt.Errorf("parse request %q: missing URL after method %s", s, fields[0])
		}
		r = Request{Method: http.MethodGet, URL: fields[0]}
	case 2:
		r = Request{Method: fields[0], URL: fields[1]}
	default:
		return Request{}, fmt.Errorf("parse request %q: %d fields, want \"METHOD URL\" or \"URL\"", s, len(fields))
	}
	if err := r.Validate(); err != nil {
		return Request{}, fmt.Errorf("parse request %q: %w", s, err)
	}
	return r, nil
}

// Validate reports whether r can be sent: its method, if set, is an HTTP
// token, and its URL is a valid template of an absolute http or https URL
// with a host.
func (r Request) Validate() error {
	if r.Method != "" {
		if err := validMethod(r.Method); err != nil {
			return fmt.Errorf("method %q: %w", r.Method, err)
		}
	}
	if _, err := compileURL(r.URL); err != nil {
		return err
	}
	return nil
}

// compileURL compiles raw as a Template and checks that its expansion is an
// absolute http or https URL with a host.
func compileURL(raw string) (*Template, error) {
	if raw == "" {
		return nil, errors.New("URL is empty")
	}
	t, err := CompileTemplate(raw)
	if err != nil {
		return nil, fmt.Errorf("URL %q: %w", raw, err)
	}
	if !strings.Contains(raw, "://") {
		return nil, fmt.Errorf("URL %q: not absolute, want http://HOST/… or https://HOST/…", raw)
	}
	// Placeholders expand to decimal digits: check one expansion.
	u, err := url.Parse(string(t.Expand(nil, 0, rand.New(rand.NewPCG(0, 0)))))
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("URL %q: scheme %q is not http or https", raw, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("URL %q: missing host", raw)
	}
	return t, nil
}

// validMethod reports whether m is a token as RFC 9110 defines it.
func validMethod(m string) error {
	if m == "" {
		return errors.New("empty")
	}
	for _, c := range []byte(m) {
		if !isTokenChar(c) {
			return fmt.Errorf("character %q is not allowed in a method", c)
		}
	}
	return nil
}

func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// isUpperWord reports whether s is made of upper-case ASCII letters only,
// like the usual methods.
func isUpperWord(s string) bool {
	for _, c := range []byte(s) {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return s != ""
}
