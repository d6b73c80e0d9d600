// Package target reaches a Go service over HTTP: its net/http/pprof
// endpoints and its Prometheus /metrics, with timeouts, response-size limits
// and errors that say what to do.
//
// A Client fetches raw bytes and never parses profiles: the run directory
// keeps what the service sent, and parsing happens on read. Only
// Client.MemStats reads what it fetches, streaming heap?debug=1's text
// to the MemStats at its end without keeping it. Local finds the pprof of a process on this machine
// among its listening ports.
package target

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/option"
)

// DefaultMaxBody is the largest response body a Client accepts unless
// Options.MaxBody says otherwise. Heap profiles of large services are a few
// MiB compressed; 64 MiB leaves room and still stops a runaway response.
const DefaultMaxBody = 64 << 20

// DefaultTimeout bounds a request that has no duration of its own (a heap
// snapshot, MemStats, /metrics). Timed profiles (CPU, trace) get their
// duration added to it.
const DefaultTimeout = 30 * time.Second

// DefaultPprofPath is where net/http/pprof mounts its handlers.
const DefaultPprofPath = "/debug/pprof/"

// Options configures a Client.
type Options struct {
	// BaseURL is the service's base URL, such as http://127.0.0.1:6060.
	BaseURL string
	// PprofPath is the path under BaseURL where pprof is served;
	// DefaultPprofPath when empty.
	PprofPath string
	// MetricsPath is where Prometheus metrics are served under BaseURL;
	// /metrics when empty.
	MetricsPath string
	// Header is added to every request (authentication, for instance).
	Header http.Header
	// CACertFile names a PEM file of CA certificates trusted for https.
	CACertFile string
	// Insecure skips verification of the server's certificate.
	Insecure bool
	// Timeout bounds each request beyond its own duration; DefaultTimeout
	// when zero.
	Timeout time.Duration
	// TimeoutSetting names where Timeout is set, for the error of a
	// request that ran out of it; "--timeout" when empty.
	TimeoutSetting string
	// MaxBody is the largest accepted response body in bytes; DefaultMaxBody
	// when zero.
	MaxBody int64
	// Transport replaces the default transport (tests).
	Transport http.RoundTripper
}

// Client fetches profiles, MemStats and metrics from one service.
type Client struct {
	base        *url.URL
	pprofPath   string
	metricsPath string
	header      http.Header
	timeout     time.Duration
	timeoutSet  string
	maxBody     int64
	http        *http.Client
}

// Validate reports a negative Timeout or MaxBody as an *option.Error;
// zero means the default. New validates, and checks BaseURL too.
func (o Options) Validate() error {
	switch {
	case o.Timeout < 0:
		return option.Errorf("Timeout", "{Timeout} %s: give a positive duration", o.Timeout)
	case o.MaxBody < 0:
		return option.Errorf("MaxBody", "{MaxBody} %d: give a positive size in bytes", o.MaxBody)
	}
	return nil
}

// New validates opts and returns a Client. It does not contact the service.
func New(opts Options) (*Client, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	base, err := ParseBaseURL(opts.BaseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{
		base:        base,
		pprofPath:   opts.PprofPath,
		metricsPath: opts.MetricsPath,
		header:      opts.Header.Clone(),
		timeout:     opts.Timeout,
		timeoutSet:  cmp.Or(opts.TimeoutSetting, "--timeout"),
		maxBody:     opts.MaxBody,
	}
	if c.pprofPath == "" {
		c.pprofPath = DefaultPprofPath
	}
	if !strings.HasPrefix(c.pprofPath, "/") {
		c.pprofPath = "/" + c.pprofPath
	}
	if !strings.HasSuffix(c.pprofPath, "/") {
		c.pprofPath += "/"
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxBody <= 0 {
		c.maxBody = DefaultMaxBody
	}
	rt := opts.Transport
	if rt == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tlsConf, err := TLSConfig(opts.CACertFile, opts.Insecure)
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = tlsConf
		// Profiles are already gzipped; asking for gzip again only costs CPU.
		tr.DisableCompression = true
		rt = tr
	}
	c.http = &http.Client{Transport: rt}
	return c, nil
}

// ParseHeaders reads headers given as "Name: value", such as the -H flags
// of a command line, for every request to a service.
func ParseHeaders(hs []string) (http.Header, error) {
	h := http.Header{}
	for _, s := range hs {
		name, value, ok := strings.Cut(s, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("header %q: want 'Name: value'", s)
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return h, nil
}

// ParseBaseURL checks that raw is an absolute http or https URL with a host
// and returns it without query or fragment.
func ParseBaseURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("target URL is empty: give the service's base URL, such as http://127.0.0.1:6060")
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parse target URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("target URL %q: scheme must be http or https", raw)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("target URL %q has no host", raw)
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	return u, nil
}

// TLSConfig is the TLS configuration of a CA file to trust (PEM) and of
// skipping verification; nil, for Go's defaults, when neither is asked.
func TLSConfig(caFile string, insecure bool) (*tls.Config, error) {
	if caFile == "" && !insecure {
		return nil, nil
	}
	conf := &tls.Config{InsecureSkipVerify: insecure} //nolint:gosec // the user asked for it with --insecure
	if caFile == "" {
		return conf, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read CA certificates: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("read CA certificates from %s: no PEM certificate found", caFile)
	}
	conf.RootCAs = pool
	return conf, nil
}

// BaseURL returns the service's base URL.
func (c *Client) BaseURL() *url.URL { u := *c.base; return &u }

// Host returns the host and port of the service.
func (c *Client) Host() string { return c.base.Host }

// ProfileURL returns the URL of the named pprof profile with the query.
func (c *Client) ProfileURL(name string, query url.Values) string {
	u := *c.base
	u.Path = c.base.Path + c.pprofPath + name
	u.RawQuery = query.Encode()
	return u.String()
}

// Profile fetches the named pprof endpoint (heap, allocs, goroutine, block,
// mutex, profile, trace, …) with the query and returns the body as sent.
// A "seconds" query extends the timeout by that many seconds.
func (c *Client) Profile(ctx context.Context, name string, query url.Values) ([]byte, error) {
	timeout := c.timeout
	if s := query.Get("seconds"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			timeout += time.Duration(n) * time.Second
		}
	}
	body, err := c.get(ctx, c.ProfileURL(name, query), timeout)
	if err != nil {
		var se *StatusError
		if name == "profile" && errors.As(err, &se) && se.Code == http.StatusInternalServerError &&
			strings.Contains(strings.ToLower(se.Body), "cpu profiling already in use") {
			return nil, fmt.Errorf("fetch CPU profile: %w", ErrCPUProfileBusy)
		}
		kind := name
		if name == "profile" {
			kind = "CPU"
		}
		return nil, fmt.Errorf("fetch %s profile: %w", kind, err)
	}
	return body, nil
}

// MemStats fetches /debug/pprof/heap?debug=1, the text heap profile
// whose trailer holds runtime.MemStats, and reads them; with gc, after a
// forced GC (gc=1), when HeapAlloc is the live heap. The body streams
// through the parser: its stack records, megabytes of text in a large
// service, are never held.
func (c *Client) MemStats(ctx context.Context, gc bool) (gcstats.MemStats, error) {
	q := url.Values{"debug": {"1"}}
	if gc {
		q.Set("gc", "1")
	}
	var ms gcstats.MemStats
	err := c.stream(ctx, c.ProfileURL("heap", q), c.timeout, func(r io.Reader, _ int64) error {
		var err error
		ms, err = gcstats.ParseHeapDebug(r)
		return err
	})
	if err != nil {
		return gcstats.MemStats{}, fmt.Errorf("fetch MemStats: %w", err)
	}
	return ms, nil
}

// PprofURL returns the URL of the service's pprof, such as
// http://127.0.0.1:6060/debug/pprof/, without user information: it is
// shown in reports, which end up in logs.
func (c *Client) PprofURL() string { return withoutUser(c.ProfileURL("", nil)) }

// Metrics fetches the service's Prometheus text exposition from /metrics.
func (c *Client) Metrics(ctx context.Context) ([]byte, error) {
	u := *c.base
	u.Path = c.base.Path + cmp.Or(c.metricsPath, "/metrics")
	body, err := c.get(ctx, u.String(), c.timeout)
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) && se.Code == http.StatusNotFound {
			se.hint = "the service serves no Prometheus metrics there; the RSS of a remote service stays unknown without them"
		}
		return nil, fmt.Errorf("fetch metrics: %w", err)
	}
	return body, nil
}

// ErrCPUProfileBusy reports that the service is already producing a CPU
// profile for someone else; only one can run at a time in a Go process.
var ErrCPUProfileBusy = errors.New("the target is already being CPU-profiled (only one CPU profile can run at a time); try again when the other profile ends")

// ErrNotFound reports a 404 from the service.
var ErrNotFound = errors.New("not found")

// StatusError is a response other than 200 OK. Body holds the start of the
// service's own explanation (net/http/pprof writes one, marked with the
// X-Go-Pprof header).
type StatusError struct {
	URL  string
	Code int
	Body string
	hint string // replaces the advice that goes with Code
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s answered %d %s", e.URL, e.Code, http.StatusText(e.Code))
	switch {
	case e.hint != "":
		msg += " (" + e.hint + ")"
	case e.Code == http.StatusNotFound:
		msg += " (is net/http/pprof mounted there? set --pprof-path if it lives elsewhere)"
	case e.Code == http.StatusUnauthorized || e.Code == http.StatusForbidden:
		msg += " (add credentials with -H 'Authorization: …')"
	}
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Is makes errors.Is(err, ErrNotFound) true for a 404.
func (e *StatusError) Is(target error) bool {
	return target == ErrNotFound && e.Code == http.StatusNotFound
}

// BodyTooLargeError reports a response over the size limit.
type BodyTooLargeError struct {
	URL   string
	Limit int64
}

func (e *BodyTooLargeError) Error() string {
	return fmt.Sprintf("response from %s is larger than the limit of %d bytes", e.URL, e.Limit)
}

// UnreachableError reports that the service could not be reached at all.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach %s: %v (is the service running and listening there?)", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

func (c *Client) get(parent context.Context, rawURL string, timeout time.Duration) ([]byte, error) {
	var body []byte
	err := c.stream(parent, rawURL, timeout, func(r io.Reader, size int64) error {
		var err error
		body, err = readBody(r, size, c.maxBody)
		return err
	})
	return body, err
}

// stream requests rawURL and hands the body of a 200 answer to read,
// with the size the response announced (-1 when it did not). The body
// fails with a *BodyTooLargeError past the client's limit, so read may
// stream it through a parser without holding it. The errors say what to
// do: unreachable, too slow, a certificate to trust, a status and the
// service's own explanation.
func (c *Client) stream(parent context.Context, rawURL string, timeout time.Duration, read func(r io.Reader, size int64) error) error {
	// Error messages end up in terminals, CI logs and run directories: they
	// show the URL without its password.
	shown := redact(rawURL)
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return fmt.Errorf("build request for %s: %w", shown, err)
	}
	for k, vs := range c.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// The caller's own cancellation or deadline is not the service's
		// fault: say so, and keep it visible to errors.Is.
		if perr := parent.Err(); perr != nil {
			return fmt.Errorf("get %s: %w", shown, perr)
		}
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("get %s: no answer within %s (raise %s if the service is slow)", shown, timeout, c.timeoutSet)
		}
		var certErr *tls.CertificateVerificationError
		if errors.As(err, &certErr) {
			return fmt.Errorf("get %s: %w (trust the service's CA with --cacert FILE, or skip verification with --insecure)", shown, unwrapURLError(err))
		}
		var opErr *net.OpError
		var dnsErr *net.DNSError
		if errors.As(err, &opErr) || errors.As(err, &dnsErr) {
			return &UnreachableError{URL: shown, Err: unwrapURLError(err)}
		}
		return fmt.Errorf("get %s: %w", shown, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &StatusError{URL: shown, Code: resp.StatusCode, Body: oneLine(string(snippet))}
	}
	tooLarge := &BodyTooLargeError{URL: shown, Limit: c.maxBody}
	if resp.ContentLength > c.maxBody {
		return tooLarge
	}
	err = read(&limitedBody{r: resp.Body, left: c.maxBody, err: tooLarge}, resp.ContentLength)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, tooLarge):
		return tooLarge
	case parent.Err() != nil:
		return fmt.Errorf("read %s: %w", shown, parent.Err())
	case ctx.Err() == context.DeadlineExceeded:
		return fmt.Errorf("read %s: body not complete within %s (raise %s if the service is slow)", shown, timeout, c.timeoutSet)
	}
	return fmt.Errorf("read %s: %w", shown, err)
}

// limitedBody reads r until left bytes have been read, then fails with
// err at the first byte past them.
type limitedBody struct {
	r    io.Reader
	left int64
	err  error
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	if int64(n) > l.left {
		n, l.left = int(l.left), 0
		return n, l.err
	}
	l.left -= int64(n)
	return n, err
}

// readBody reads r to its end, or to limit+1 bytes: into a buffer of
// size bytes when the response says so, else one that doubles from 64
// KiB, never past limit+1. A body that never ends so stops at the limit
// having taken less than twice it in all, where io.ReadAll would take
// five times; a body that filled less than four fifths of its buffer is
// copied to one of its size, as a run keeps its profiles until it ends.
func readBody(r io.Reader, size, limit int64) ([]byte, error) {
	n := int64(64 << 10)
	if size >= 0 {
		n = size + 1 // room to see the end without growing
	}
	buf := make([]byte, 0, min(n, limit+1))
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return buf, nil
			}
			grow := 2 * int64(cap(buf))
			if grow >= limit {
				grow = limit + 1
			}
			grown := make([]byte, len(buf), grow)
			copy(grown, buf)
			buf = grown
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			if len(buf) < cap(buf)*4/5 {
				buf = bytes.Clone(buf)
			}
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// redact hides the password in rawURL's user information, if any.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	return u.Redacted()
}

// withoutUser returns rawURL without its user information, if any.
func withoutUser(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return rawURL
	}
	u.User = nil
	return u.String()
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// oneLine squeezes a response snippet to one short line, dropping HTML tags'
// line breaks so it fits an error message.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const max = 200
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
