package load

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// client is what a run needs from HTTP: a session per worker, and a way to
// fail every outstanding request at once when the run is interrupted.
type client interface {
	// check reaches every address the targets use, so that an unreachable
	// target is one error before the run instead of a storm of failures.
	check(ctx context.Context) error
	// session returns the sending state of one worker.
	session() session
	// abort fails the outstanding requests and those sent after it.
	abort()
	// bytes returns the bytes read and written so far.
	bytes() (in, out uint64)
	// opened returns the number of connections opened so far.
	opened() uint64
	// close releases the connections.
	close()
}

// session sends one worker's requests, one at a time.
type session interface {
	// send sends t with the given URL, at sent (now), and reads the whole
	// response. It returns the status, and whether the response came over
	// HTTP/2.
	send(ctx context.Context, t *target, url []byte, sent time.Time) (status int, h2 bool, err error)
	// warm opens the connection requests to t will use, if it can, so that
	// the run does not start with connecting.
	warm(t *target)
}

// errAborted fails the requests of an interrupted run.
var errAborted = errors.New("run stopped")

// checkTimeout bounds the reachability check of one address.
const checkTimeout = 5 * time.Second

// Buffer sizes of HTTP/1.1 connections.
const (
	readBufferSize  = 16 << 10
	writeBufferSize = 8 << 10
)

// httpClient sends HTTP/1.1 with fasthttp's request writer and response
// parser over connections of its own, one per worker and address, and
// HTTP/2 through net/http. A target goes through net/http when it wants
// HTTP/2 (Protocol http2) or may negotiate it (an https URL with Protocol
// auto).
//
// fasthttp's HostClient is not used: its pool adds a lock per request and
// leaves a cleaning goroutine running for up to ten seconds after the last
// request; a worker that owns its connection needs neither, and the closed
// model's connection count is then exactly its number of workers.
type httpClient struct {
	opts  *Options
	conns connSet
	std   *http.Client // nil when no target needs it
	tr    *http.Transport
	addrs []string
	tls   map[string]*tls.Config // by address, for HTTP/1.1 over TLS

	// spare holds the connections check opened, for the first requests to
	// use, so that the check adds no connection of its own.
	spareMu sync.Mutex
	spare   map[string][]*countedConn

	// aborts are called by abort: the event loops' ways to stop.
	abortMu sync.Mutex
	aborts  []func()
}

var _ client = (*httpClient)(nil)

func newHTTPClient(opts *Options, targets []*target) *httpClient {
	c := &httpClient{opts: opts, tls: map[string]*tls.Config{}, spare: map[string][]*countedConn{}}
	c.conns.conns = map[*countedConn]struct{}{}
	seen := map[string]bool{}
	for _, t := range targets {
		if !seen[t.addr] {
			seen[t.addr] = true
			c.addrs = append(c.addrs, t.addr)
		}
		switch {
		case t.std && c.std == nil:
			c.std, c.tr = c.newStd()
		case !t.std && t.tls && c.tls[t.addr] == nil:
			cfg := &tls.Config{}
			if opts.TLS != nil {
				cfg = opts.TLS.Clone()
			}
			if cfg.ServerName == "" {
				host, _, _ := net.SplitHostPort(t.addr)
				cfg.ServerName = host
			}
			cfg.NextProtos = []string{"http/1.1"}
			c.tls[t.addr] = cfg
		}
	}
	return c
}

func (c *httpClient) newStd() (*http.Client, *http.Transport) {
	var p http.Protocols
	switch c.opts.Protocol {
	case ProtocolHTTP2:
		p.SetHTTP2(true)
		p.SetUnencryptedHTTP2(true)
	default:
		p.SetHTTP1(true)
		p.SetHTTP2(true)
	}
	dialer := &net.Dialer{Timeout: c.opts.Timeout}
	tr := &http.Transport{
		Protocols: &p,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if conn := c.takeSpare(addr); conn != nil {
				return conn, nil
			}
			raw, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			conn, err := c.conns.track(raw)
			if err != nil {
				return nil, err
			}
			return conn, nil
		},
		TLSClientConfig:     c.opts.TLS,
		TLSHandshakeTimeout: c.opts.Timeout,
		ForceAttemptHTTP2:   true,
		DisableCompression:  true,
		DisableKeepAlives:   c.opts.NoKeepAlive,
		MaxIdleConnsPerHost: c.opts.workers(),
	}
	return &http.Client{
		Transport: tr,
		// The response measured is the one the URL gives, redirect or not.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, tr
}

func (c *httpClient) check(ctx context.Context) error {
	d := net.Dialer{Timeout: min(c.opts.Timeout, checkTimeout)}
	for _, addr := range c.addrs {
		raw, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			var op *net.OpError
			if errors.As(err, &op) && op.Err != nil {
				err = op.Err
			}
			return fmt.Errorf("cannot reach %s: %w", addr, err)
		}
		conn, err := c.conns.track(raw)
		if err != nil {
			return err
		}
		c.spareMu.Lock()
		c.spare[addr] = append(c.spare[addr], conn)
		c.spareMu.Unlock()
	}
	return nil
}

// takeSpare returns a connection check opened to addr, or nil.
func (c *httpClient) takeSpare(addr string) *countedConn {
	c.spareMu.Lock()
	defer c.spareMu.Unlock()
	conns := c.spare[addr]
	if len(conns) == 0 {
		return nil
	}
	c.spare[addr] = conns[1:]
	return conns[0]
}

func (c *httpClient) session() session {
	s := &httpSession{c: c}
	if c.std != nil {
		s.std = &stdSession{c: c}
	}
	return s
}

func (c *httpClient) abort() {
	c.conns.abort()
	c.abortMu.Lock()
	defer c.abortMu.Unlock()
	for _, f := range c.aborts {
		f()
	}
}

// onAbort makes abort call f.
func (c *httpClient) onAbort(f func()) {
	c.abortMu.Lock()
	defer c.abortMu.Unlock()
	c.aborts = append(c.aborts, f)
}

func (c *httpClient) bytes() (in, out uint64) { return c.conns.bytes() }

func (c *httpClient) opened() uint64 { return c.conns.opened.Load() }

func (c *httpClient) close() {
	if c.tr != nil {
		c.tr.CloseIdleConnections()
	}
	c.conns.abort()
}

// httpSession is one worker's requests, responses and connections, reused
// from one request to the next so that sending allocates nothing.
type httpSession struct {
	c    *httpClient
	req  fasthttp.Request
	resp fasthttp.Response
	// wire is req as written, when its URL is constant: every request to
	// the target is then these bytes, copied rather than written anew.
	wire []byte
	// buf and scratch render requests for an event loop.
	buf     bytes.Buffer
	scratch *bufio.Writer
	cur     *target     // the target req holds
	conn    *workerConn // cur's connection
	conns   map[string]*workerConn
	std     *stdSession
}

// workerConn is a worker's connection to one address.
type workerConn struct {
	addr string
	tls  *tls.Config
	conn net.Conn // nil until dialled, and after it was closed
	br   *bufio.Reader
	bw   *bufio.Writer
	// deadline is conn's deadline, zero when it has none.
	deadline time.Time
	// attached says br and bw read and write conn.
	attached bool
}

// deadlineSlack is how much later than its Timeout a request may time
// out, as a fraction of the Timeout: a connection's deadline is moved
// forward only when the next request would have less than its Timeout,
// and then by the slack more, so that it is set once in many requests
// rather than for each (setting it moves a timer of the runtime).
const deadlineSlack = 100 // Timeout/100

func (s *httpSession) send(ctx context.Context, t *target, url []byte, sent time.Time) (int, bool, error) {
	if t.std {
		return s.std.send(ctx, t, url, sent)
	}
	if t != s.cur {
		s.load(t)
	}
	if t.constURL == nil {
		s.req.SetRequestURIBytes(url)
		s.req.URI().DisablePathNormalizing = true
	}
	deadline := sent.Add(s.c.opts.Timeout)
	fresh, err := s.roundTrip(deadline)
	if err != nil && !fresh && isStale(err) {
		// The server closed the idle connection as the request left: try
		// once more on a new one, as HTTP clients do.
		_, err = s.roundTrip(deadline)
	}
	if err != nil {
		return 0, false, err
	}
	return s.resp.StatusCode(), false, nil
}

// roundTrip writes the request and reads the whole response on the
// current connection, dialling it first when needed; fresh reports that the
// connection was opened for this request.
func (s *httpSession) roundTrip(deadline time.Time) (fresh bool, err error) {
	wc := s.conn
	if wc.conn == nil {
		spare, err := s.dial(wc, deadline)
		if err != nil {
			return true, err
		}
		fresh = !spare
	}
	if !wc.attached {
		// The buffers come with the first request, not the dial: an event
		// loop takes over the connections warm dialled, and has its own.
		if wc.br == nil {
			wc.br = bufio.NewReaderSize(wc.conn, readBufferSize)
			wc.bw = bufio.NewWriterSize(wc.conn, writeBufferSize)
		} else {
			wc.br.Reset(wc.conn)
			wc.bw.Reset(wc.conn)
		}
		wc.attached = true
	}
	if wc.deadline.Before(deadline) {
		wc.deadline = deadline.Add(s.c.opts.Timeout / deadlineSlack)
		if err := wc.conn.SetDeadline(wc.deadline); err != nil {
			s.closeConn(wc)
			return fresh, err
		}
	}
	if s.wire != nil {
		_, err = wc.bw.Write(s.wire)
	} else {
		err = s.req.Write(wc.bw)
	}
	if err == nil {
		err = wc.bw.Flush()
	}
	if err == nil {
		// A HEAD response says the length of a body it does not send.
		s.resp.SkipBody = s.cur != nil && s.cur.method == http.MethodHead
		err = s.resp.ReadLimitBody(wc.br, s.c.opts.MaxBody)
	}
	if err != nil || s.resp.ConnectionClose() || s.c.opts.NoKeepAlive {
		s.closeConn(wc)
	}
	return fresh, err
}

// dial opens the worker's connection to its address, or takes a spare one.
func (s *httpSession) dial(wc *workerConn, deadline time.Time) (spare bool, err error) {
	counted := s.c.takeSpare(wc.addr)
	spare = counted != nil
	if counted == nil {
		d := net.Dialer{Deadline: deadline}
		raw, err := d.Dial("tcp", wc.addr)
		if err != nil {
			return false, err
		}
		if counted, err = s.c.conns.track(raw); err != nil {
			return false, err
		}
	}
	var conn net.Conn = counted
	if wc.tls != nil {
		tc := tls.Client(conn, wc.tls)
		tc.SetDeadline(deadline)
		if err := tc.Handshake(); err != nil {
			tc.Close()
			return spare, err
		}
		conn = tc
	}
	wc.conn = conn
	wc.attached = false
	return spare, nil
}

func (s *httpSession) closeConn(wc *workerConn) {
	if wc.conn != nil {
		wc.conn.Close()
		wc.conn = nil
		wc.deadline = time.Time{}
	}
}

// isStale reports whether err is how a connection the server had closed
// fails a request sent on it.
func isStale(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, fasthttp.ErrConnectionClosed)
}

func (s *httpSession) warm(t *target) {
	if t.std {
		return
	}
	s.load(t)
	if s.conn.conn == nil {
		// A failure shows again, and is counted, at the first request.
		_, _ = s.dial(s.conn, time.Now().Add(s.c.opts.Timeout))
	}
}

// load fills the request with what does not change between requests to t.
func (s *httpSession) load(t *target) {
	s.cur = t
	wc := s.conns[t.addr]
	if wc == nil {
		if s.conns == nil {
			s.conns = map[string]*workerConn{}
		}
		wc = &workerConn{addr: t.addr, tls: s.c.tls[t.addr]}
		s.conns[t.addr] = wc
	}
	s.conn = wc
	req := &s.req
	req.Reset()
	req.Header.SetMethod(t.method)
	if t.constURL != nil {
		req.SetRequestURIBytes(t.constURL)
		req.URI().DisablePathNormalizing = true
	}
	for name, values := range t.header {
		if http.CanonicalHeaderKey(name) == "Host" {
			continue
		}
		for _, v := range values {
			req.Header.Add(name, v)
		}
	}
	if t.host != "" {
		req.Header.SetHost(t.host)
		req.UseHostHeader = true
	}
	if len(t.body) > 0 {
		req.SetBodyRaw(t.body)
	}
	if s.c.opts.NoKeepAlive {
		req.SetConnectionClose()
	}
	s.wire = s.wire[:0]
	if t.constURL == nil {
		s.wire = nil
		return
	}
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	if req.Write(w) != nil || w.Flush() != nil {
		// The request shows its error at its first send.
		s.wire = nil
		return
	}
	s.wire = append(s.wire, b.Bytes()...)
}

// stdSession sends through net/http.
type stdSession struct {
	c *httpClient
}

func (s *stdSession) send(ctx context.Context, t *target, url []byte, sent time.Time) (int, bool, error) {
	ctx, cancel := context.WithDeadline(ctx, sent.Add(s.c.opts.Timeout))
	defer cancel()
	u := string(t.constURL)
	if t.constURL == nil {
		u = string(url)
	}
	var body io.Reader = http.NoBody
	if len(t.body) > 0 {
		body = bytes.NewReader(t.body)
	}
	req, err := http.NewRequestWithContext(ctx, t.method, u, body)
	if err != nil {
		return 0, false, err
	}
	if t.header != nil {
		req.Header = t.header.Clone()
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		// Like wrk, and like the HTTP/1.1 path: no User-Agent unless set.
		req.Header["User-Agent"] = []string{""}
	}
	if t.host != "" {
		req.Host = t.host
	}
	resp, err := s.c.std.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, int64(s.c.opts.MaxBody)+1))
	if err != nil {
		return 0, false, err
	}
	if n > int64(s.c.opts.MaxBody) {
		return 0, false, errBodyTooLarge
	}
	return resp.StatusCode, resp.ProtoMajor == 2, nil
}

// connSet tracks a run's connections: it counts their bytes and closes them
// all when the run is interrupted. Each connection counts its own bytes,
// added to the set's when it is closed, so that connections share no
// counter.
type connSet struct {
	opened atomic.Uint64

	mu      sync.Mutex
	conns   map[*countedConn]struct{}
	in, out uint64 // of the connections no longer in conns
	aborted bool
}

// bytes returns the bytes read and written so far.
func (s *connSet) bytes() (in, out uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, out = s.in, s.out
	for c := range s.conns {
		in += c.in.Load()
		out += c.out.Load()
	}
	return in, out
}

// add counts bytes of connections the set no longer tracks.
func (s *connSet) add(in, out uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.in += in
	s.out += out
}

// drop removes c from the set and adds its bytes to the set's; s.mu is
// held. It reports whether c was in the set.
func (s *connSet) drop(c *countedConn) bool {
	if _, ok := s.conns[c]; !ok {
		return false
	}
	delete(s.conns, c)
	s.in += c.in.Load()
	s.out += c.out.Load()
	return true
}

func (s *connSet) track(conn net.Conn) (*countedConn, error) {
	c := &countedConn{Conn: conn, set: s}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborted {
		conn.Close()
		return nil, errAborted
	}
	s.conns[c] = struct{}{}
	s.opened.Add(1)
	return c, nil
}

func (s *connSet) abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aborted = true
	for c := range s.conns {
		c.Conn.Close()
		s.drop(c)
	}
}

// countedConn is a connection whose bytes are counted.
type countedConn struct {
	net.Conn
	set     *connSet
	in, out atomic.Uint64
}

func (c *countedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.in.Add(uint64(n))
	return n, err
}

func (c *countedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.out.Add(uint64(n))
	return n, err
}

func (c *countedConn) Close() error {
	c.set.mu.Lock()
	c.set.drop(c)
	c.set.mu.Unlock()
	return c.Conn.Close()
}
