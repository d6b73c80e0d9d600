package load

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Request is the template of the requests a run sends.
type Request struct {
	// Method is the HTTP method; empty means GET.
	Method string
	// URL is the absolute http or https URL, with optional {seq}, {rand:N}
	// and {pick:FILE} placeholders (see Template) in its path and query.
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

// ParseRequestOn parses a request as ParseRequest does, a URL that is a
// path (it starts with /) being one on base, a URL such as a service's
// "http://host:port" or "https://host/prefix".
func ParseRequestOn(s, base string) (Request, error) {
	fields := strings.Fields(s)
	if n := len(fields); n > 0 && strings.HasPrefix(fields[n-1], "/") {
		fields[n-1] = base + fields[n-1]
	}
	return ParseRequest(strings.Join(fields, " "))
}

// Origin returns the scheme://host of a URL, or "" when it has no scheme.
// The URL is not parsed: placeholders may stand in its path.
func Origin(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	j := strings.IndexAny(u[i+3:], "/?#")
	if j < 0 {
		return u
	}
	return u[:i+3+j]
}

// Validate reports whether r can be sent: its method, if set, is an HTTP
// token, and its URL is an absolute http or https URL with a host, and
// placeholders, if any, only in its path and query. It does not read the
// files of {pick:FILE} placeholders.
func (r Request) Validate() error {
	_, err := r.compile(func(string) ([]byte, error) { return []byte("x"), nil })
	return err
}

// target is a compiled Request.
type target struct {
	method string
	url    *Template
	// constURL is the URL when the template has no placeholders.
	constURL []byte
	// addr is the host and port connections go to; tls says whether they
	// use TLS.
	addr string
	tls  bool
	// std says the requests go through net/http (HTTP/2, or an https URL
	// that may negotiate it) rather than fasthttp.
	std bool
	// host is the Host header's value when Header sets one.
	host   string
	header http.Header
	body   []byte
}

// compile validates r and compiles its URL.
func (r Request) compile(readFile ReadFileFunc) (*target, error) {
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	if err := validMethod(method); err != nil {
		return nil, fmt.Errorf("method %q: %w", method, err)
	}
	tmpl, u, err := compileURL(r.URL, readFile)
	if err != nil {
		return nil, err
	}
	t := &target{
		method: method,
		url:    tmpl,
		tls:    strings.EqualFold(u.Scheme, "https"),
		header: r.Header,
		host:   r.Header.Get("Host"),
		body:   r.Body,
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if t.tls {
			port = "443"
		}
	}
	t.addr = net.JoinHostPort(u.Hostname(), port)
	if tmpl.Constant() {
		t.constURL = []byte(r.URL)
	}
	for name, values := range r.Header {
		if err := validHeader(name, values); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// compileURL compiles raw as a Template and checks that its expansion is an
// absolute http or https URL with a host, and that its placeholders are in
// the path or query.
func compileURL(raw string, readFile ReadFileFunc) (*Template, *url.URL, error) {
	if raw == "" {
		return nil, nil, errors.New("URL is empty")
	}
	t, err := CompileTemplate(raw, readFile)
	if err != nil {
		return nil, nil, fmt.Errorf("URL %q: %w", raw, err)
	}
	scheme := strings.Index(raw, "://")
	if scheme < 0 {
		return nil, nil, fmt.Errorf("URL %q: not absolute, want http://HOST/… or https://HOST/…", raw)
	}
	path := len(raw)
	if i := strings.IndexAny(raw[scheme+3:], "/?#"); i >= 0 {
		path = scheme + 3 + i
	}
	if at := t.firstPlaceholder(); at >= 0 && at < path {
		return nil, nil, fmt.Errorf("URL %q: placeholder at offset %d is before the path: the scheme, host and port must be fixed", raw, at)
	}
	u, err := url.Parse(string(t.Expand(nil, 0, 0)))
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, nil, fmt.Errorf("URL %q: %w", raw, err)
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return nil, nil, fmt.Errorf("URL %q: scheme %q is not http or https", raw, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, nil, fmt.Errorf("URL %q: missing host", raw)
	}
	if u.User != nil {
		return nil, nil, fmt.Errorf("URL %q: user information in the URL is not supported; send an Authorization header", raw)
	}
	return t, u, nil
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

// validHeader reports whether a header field can be sent as it is.
func validHeader(name string, values []string) error {
	if name == "" {
		return errors.New("header with an empty name")
	}
	for _, c := range []byte(name) {
		if !isTokenChar(c) {
			return fmt.Errorf("header %q: character %q is not allowed in a name", name, c)
		}
	}
	for _, v := range values {
		if strings.ContainsAny(v, "\r\n\x00") {
			return fmt.Errorf("header %q: value %q holds a line break or NUL", name, v)
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
