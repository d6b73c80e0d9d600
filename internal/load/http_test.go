package load

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The tests in this file run against real servers on 127.0.0.1, in real
// time: they check counts, which the schedule fixes, and bound timings
// generously.

func TestRun_httpServer(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		seqs = map[int]int{}
		bad  []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seq, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/items/"))
		mu.Lock()
		seqs[seq]++
		if err != nil || r.Method != http.MethodPost || r.Host != "example.test" || r.Header.Get("X-Test") != "yes" || string(body) != "abc" {
			bad = append(bad, fmt.Sprintf("%s %s host %s header %q body %q", r.Method, r.URL, r.Host, r.Header.Get("X-Test"), body))
		}
		mu.Unlock()
		io.WriteString(w, "hello")
	}))
	defer srv.Close()

	began := time.Now()
	res, err := Run(t.Context(), Options{
		Request: Request{
			Method: http.MethodPost,
			URL:    srv.URL + "/items/{seq}",
			Header: http.Header{"X-Test": {"yes"}, "Host": {"example.test"}},
			Body:   []byte("abc"),
		},
		Rate:     200,
		Duration: time.Second,
	})
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 200 || res.Completed != 200 || res.Errors != 0 || res.Dropped != 0 {
		t.Errorf("requests, completed, errors, dropped = %d, %d, %d, %d, want 200, 200, 0, 0", res.Requests, res.Completed, res.Errors, res.Dropped)
	}
	if res.StatusCodes[200] != 200 || len(res.StatusCodes) != 1 || len(res.ErrorKinds) != 0 {
		t.Errorf("status codes %v, error kinds %v, want 200 × 200 and no errors", res.StatusCodes, res.ErrorKinds)
	}
	if res.BytesIn != 5*200 || res.BytesOut != 3*200 {
		t.Errorf("bytes in, out = %d, %d, want 1000, 600", res.BytesIn, res.BytesOut)
	}
	if res.Duration < time.Second || res.Duration > took {
		t.Errorf("duration %s, want at least 1s and at most the %s Run took", res.Duration, took)
	}
	if want := 200 / res.Duration.Seconds(); res.Rate != want {
		t.Errorf("achieved rate %g/s, want %g/s", res.Rate, want)
	}
	if l := res.Latency; l.Max <= 0 || l.Max > res.Duration || l.Min > l.P50 || l.P50 > l.P99 || l.P99 > l.Max {
		t.Errorf("latency %+v is not ordered or out of range", l)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range 200 {
		if seqs[i] != 1 {
			t.Errorf("request /items/%d seen %d times, want once", i, seqs[i])
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d requests were not as sent, first: %s", len(bad), bad[0])
	}
}

// TestRun_keepAlive checks that bodies are drained and closed so that
// connections are reused: with one request outstanding at a time, a few
// connections serve them all.
func TestRun_keepAlive(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 10000))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	res, err := Run(t.Context(), Options{
		Request:     Request{URL: srv.URL},
		Rate:        50,
		Duration:    400 * time.Millisecond,
		MaxInFlight: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests+res.Dropped != 20 || res.Completed != res.Requests || res.BytesIn != 10000*res.Completed {
		t.Errorf("requests %d, dropped %d, completed %d, bytes in %d, want 20 scheduled, all sent completed with 10000 bytes each",
			res.Requests, res.Dropped, res.Completed, res.BytesIn)
	}
	if n := conns.Load(); n > 3 {
		t.Errorf("%d connections for %d requests one at a time, want them reused", n, res.Requests)
	}
}

func TestRun_httpErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// server starts a server and returns its base URL.
		server      func(t *testing.T) string
		rate        float64
		duration    time.Duration
		timeout     time.Duration
		maxInFlight int
		want        Result // the counts, status codes, error kinds and bytes in
	}{
		{
			name: "status codes",
			server: func(t *testing.T) string {
				return serve(t, func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/1" || r.URL.Path == "/3" {
						http.Error(w, "missing", http.StatusNotFound)
						return
					}
					http.Error(w, "boom", http.StatusInternalServerError)
				})
			},
			rate: 100, duration: 300 * time.Millisecond,
			want: Result{
				Requests: 30, Completed: 30, Errors: 30,
				StatusCodes: map[int]uint64{404: 2, 500: 28},
				ErrorKinds:  map[string]uint64{"status_4xx": 2, "status_5xx": 28},
				BytesIn:     2*len64("missing\n") + 28*len64("boom\n"),
			},
		},
		{
			name:   "connection refused",
			server: closedAddress,
			rate:   50, duration: 200 * time.Millisecond,
			want: Result{
				Requests: 10, Errors: 10,
				StatusCodes: map[int]uint64{}, ErrorKinds: map[string]uint64{ErrorKindConnectionRefused: 10},
			},
		},
		{
			name: "connection closed by the server",
			server: func(t *testing.T) string {
				return serve(t, func(w http.ResponseWriter, r *http.Request) {
					conn, _, err := http.NewResponseController(w).Hijack()
					if err == nil {
						conn.Close()
					}
				})
			},
			rate: 20, duration: 200 * time.Millisecond,
			want: Result{
				Requests: 4, Errors: 4,
				StatusCodes: map[int]uint64{}, ErrorKinds: map[string]uint64{ErrorKindConnectionClosed: 4},
			},
		},
		{
			name: "untrusted certificate",
			server: func(t *testing.T) string {
				srv := httptest.NewUnstartedServer(http.NotFoundHandler())
				srv.Config.ErrorLog = discardLog()
				srv.StartTLS()
				t.Cleanup(srv.Close)
				return srv.URL
			},
			rate: 10, duration: 200 * time.Millisecond,
			want: Result{
				Requests: 2, Errors: 2,
				StatusCodes: map[int]uint64{}, ErrorKinds: map[string]uint64{ErrorKindTLS: 2},
			},
		},
		{
			name: "body stalls past the timeout",
			server: func(t *testing.T) string {
				return serveStalled(t, "partial")
			},
			rate: 10, duration: 200 * time.Millisecond, timeout: 300 * time.Millisecond,
			want: Result{
				Requests: 2, Errors: 2,
				StatusCodes: map[int]uint64{}, ErrorKinds: map[string]uint64{ErrorKindTimeout: 2},
				BytesIn: 2 * len64("partial"),
			},
		},
		{
			// The stalled handlers hold the only 4 slots past the end of
			// the schedule: every later request is dropped.
			name: "stalled server fills the in-flight bound",
			server: func(t *testing.T) string {
				return serveStalled(t, "")
			},
			rate: 100, duration: 300 * time.Millisecond, timeout: 500 * time.Millisecond, maxInFlight: 4,
			want: Result{
				Requests: 4, Errors: 4, Dropped: 26,
				StatusCodes: map[int]uint64{}, ErrorKinds: map[string]uint64{ErrorKindTimeout: 4},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := tt.server(t)
			res, err := Run(t.Context(), Options{
				Request:     Request{URL: base + "/{seq}"},
				Rate:        tt.rate,
				Duration:    tt.duration,
				Timeout:     tt.timeout,
				MaxInFlight: tt.maxInFlight,
			})
			if err != nil {
				t.Fatal(err)
			}
			got := Result{
				Requests: res.Requests, Completed: res.Completed, Errors: res.Errors, Dropped: res.Dropped,
				StatusCodes: res.StatusCodes, ErrorKinds: res.ErrorKinds, BytesIn: res.BytesIn,
			}
			if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", tt.want); g != w {
				t.Errorf("result:\n got %s\nwant %s", g, w)
			}
			if limit := tt.duration + max(tt.timeout, time.Second) + 2*time.Second; res.Duration > limit {
				t.Errorf("run took %s, want at most %s", res.Duration, limit)
			}
		})
	}
}

func TestRun_httpCancel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		base     func(t *testing.T) string
		wantKind string // the error kind of every request, if any
	}{
		{name: "fast server", base: func(t *testing.T) string {
			return serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
		}},
		{name: "stalled server", base: func(t *testing.T) string { return serveStalled(t, "") }, wantKind: ErrorKindCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := tt.base(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var canceledAt time.Time
			res, err := Run(ctx, Options{
				Request:  Request{URL: base + "/"},
				Rate:     100,
				Duration: time.Minute,
				Timeout:  time.Minute,
				Progress: func(p Progress) {
					if p.Sent >= 10 && canceledAt.IsZero() {
						canceledAt = time.Now()
						cancel()
					}
				},
			})
			if err != nil {
				t.Fatalf("Run after cancel: %v, want the partial result and no error", err)
			}
			if canceledAt.IsZero() {
				t.Fatalf("never canceled: %+v", res)
			}
			if after := time.Since(canceledAt); after > 2*time.Second {
				t.Errorf("Run returned %s after cancel, want promptly", after)
			}
			if res.Requests < 10 || res.Requests > 1000 || res.Dropped != 0 {
				t.Errorf("requests, dropped = %d, %d, want 10 to 1000 requests, none dropped", res.Requests, res.Dropped)
			}
			if tt.wantKind != "" && (res.Completed != 0 || res.ErrorKinds[tt.wantKind] != res.Requests) {
				t.Errorf("completed %d, error kinds %v, want all %d requests %s", res.Completed, res.ErrorKinds, res.Requests, tt.wantKind)
			}
			if tt.wantKind == "" && res.Completed+res.ErrorKinds[ErrorKindCanceled] != res.Requests {
				t.Errorf("completed %d, error kinds %v, want every one of %d requests completed or canceled", res.Completed, res.ErrorKinds, res.Requests)
			}
		})
	}
}

func TestRunner_errorKind(t *testing.T) {
	wrap := func(err error) error { return &url.Error{Op: "Get", URL: "http://h/", Err: err} }
	tests := []struct {
		name     string
		err      error
		canceled bool
		want     string
	}{
		{name: "deadline", err: wrap(context.DeadlineExceeded), want: ErrorKindTimeout},
		{name: "net timeout", err: wrap(&net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}), want: ErrorKindTimeout},
		{name: "refused", err: wrap(&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), want: ErrorKindConnectionRefused},
		{name: "reset", err: wrap(&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), want: ErrorKindConnectionReset},
		{name: "broken pipe", err: wrap(&net.OpError{Op: "write", Err: os.NewSyscallError("write", syscall.EPIPE)}), want: ErrorKindConnectionReset},
		{name: "eof", err: wrap(io.EOF), want: ErrorKindConnectionClosed},
		{name: "unexpected eof", err: io.ErrUnexpectedEOF, want: ErrorKindConnectionClosed},
		{name: "dns", err: wrap(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "nope.invalid", IsNotFound: true}}), want: ErrorKindDNS},
		{name: "unknown authority", err: wrap(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), want: ErrorKindTLS},
		{name: "hostname mismatch", err: wrap(x509.HostnameError{Host: "h"}), want: ErrorKindTLS},
		{name: "not tls", err: wrap(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), want: ErrorKindTLS},
		{name: "alert", err: wrap(tls.AlertError(42)), want: ErrorKindTLS},
		{name: "other", err: wrap(errors.New("malformed HTTP response")), want: ErrorKindOther},
		{name: "run canceled wins", err: wrap(context.DeadlineExceeded), canceled: true, want: ErrorKindCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			if tt.canceled {
				cancel()
			}
			defer cancel()
			if got := (&runner{}).errorKind(ctx, tt.err); got != tt.want {
				t.Errorf("errorKind(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

// serve starts a server on 127.0.0.1 that is closed when the test ends.
func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// serveStalled starts a server that writes the response header and prefix,
// then stalls until the request ends or the test does.
func serveStalled(t *testing.T, prefix string) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if prefix != "" {
			io.WriteString(w, prefix)
			http.NewResponseController(w).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	// Cleanups run last first: release the handlers, then close.
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return srv.URL
}

// closedAddress returns the URL of a 127.0.0.1 port nothing listens on.
func closedAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func len64(s string) uint64 { return uint64(len(s)) }

// discardLog is a server error log that drops what it is given, such as
// the handshake errors of a client that does not trust the server.
func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }
