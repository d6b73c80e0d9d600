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
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The tests in this file run against real servers on 127.0.0.1, in real
// time: they check counts, which the schedule or the request count fixes,
// and bound timings generously.

func TestRun_httpRequests(t *testing.T) {
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
		if err != nil || r.Method != http.MethodPost || r.Host != "example.test" || r.Header.Get("X-Test") != "yes" ||
			string(body) != "abc" || r.URL.RawQuery != "k=v" || r.ProtoMajor != 1 {
			bad = append(bad, fmt.Sprintf("%s %s %s host %s header %q body %q", r.Method, r.URL, r.Proto, r.Host, r.Header.Get("X-Test"), body))
		}
		mu.Unlock()
		io.WriteString(w, "hello")
	}))
	defer srv.Close()

	res, err := Run(t.Context(), Options{
		Targets: []Request{{
			Method: http.MethodPost,
			URL:    srv.URL + "/items/{seq}?k=v",
			Header: http.Header{"X-Test": {"yes"}, "Host": {"example.test"}},
			Body:   []byte("abc"),
		}},
		Rate:     200,
		Duration: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 200 || res.Completed != 200 || res.Errors != 0 || res.Dropped != 0 || res.StatusCodes[200] != 200 {
		t.Errorf("requests, completed, errors, dropped, 200s = %d, %d, %d, %d, %d; want 200, 200, 0, 0, 200",
			res.Requests, res.Completed, res.Errors, res.Dropped, res.StatusCodes[200])
	}
	// Headers and bodies: each response at least its status line and
	// body, each request its request line, headers and body.
	if res.BytesIn < 200*len64("HTTP/1.1 200 OK\r\n\r\nhello") || res.BytesOut < 200*len64("POST /items/0?k=v HTTP/1.1\r\nHost: example.test\r\n\r\nabc") {
		t.Errorf("bytes in, out = %d, %d, too few for 200 requests", res.BytesIn, res.BytesOut)
	}
	if res.Duration != time.Second || res.Rate != 200 || res.Protocol != "HTTP/1.1" || res.SuccessRatio() != 1 {
		t.Errorf("duration %s, rate %g, protocol %q, success %g; want 1s, 200/s, HTTP/1.1, 1", res.Duration, res.Rate, res.Protocol, res.SuccessRatio())
	}
	if l := res.Latency; l.Max <= 0 || l.Max > res.Elapsed || l.Min > l.P50 || l.P50 > l.P99 || l.P99 > l.Max {
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

// TestRun_httpConnections counts the connections the server sees.
func TestRun_httpConnections(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      Options
		wantConns func(res Result) int64
	}{
		{
			name:      "closed model, one connection each",
			opts:      Options{Connections: 4, Duration: 300 * time.Millisecond},
			wantConns: func(Result) int64 { return 4 },
		},
		{
			name:      "closed model without keep-alive, one per request",
			opts:      Options{Connections: 2, MaxRequests: 30, NoKeepAlive: true},
			wantConns: func(Result) int64 { return 30 },
		},
		{
			name:      "open model, one per worker",
			opts:      Options{Rate: 200, Duration: 300 * time.Millisecond},
			wantConns: func(r Result) int64 { return int64(r.Connections) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var conns atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, strings.Repeat("x", 1000))
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()
			opts := tt.opts
			opts.Targets = []Request{{URL: srv.URL + "/"}}
			res, err := Run(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests == 0 || res.Completed != res.Requests || res.StatusCodes[200] != res.Requests {
				t.Errorf("requests %d, completed %d, status codes %v: want all completed with 200", res.Requests, res.Completed, res.StatusCodes)
			}
			if got, want := conns.Load(), tt.wantConns(res); got != want {
				t.Errorf("server saw %d connections for %d requests, want %d", got, res.Requests, want)
			}
		})
	}
}

func TestRun_httpOpenModelRate(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(jsonHandler))
	defer srv.Close()
	began := time.Now()
	res, err := Run(t.Context(), Options{Targets: []Request{{URL: srv.URL}}, Rate: 1000, Duration: time.Second})
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	// The count is the schedule's; the time it took, the machine's.
	if res.Requests+res.Dropped != 1000 || res.Completed != res.Requests {
		t.Errorf("requests %d, dropped %d, completed %d: want 1000 scheduled and every one sent completed", res.Requests, res.Dropped, res.Completed)
	}
	if res.Rate > 1000 || took > 5*time.Second {
		t.Errorf("achieved %g/s in %s, want at most 1000/s within a few seconds", res.Rate, took)
	}
	// A loaded machine (the race detector, other tests) may keep the
	// generator from its rate; then the result must say so.
	if res.Rate < 800 && !res.Behind {
		t.Errorf("achieved %g/s of 1000/s asked, but the result does not say the generator fell behind", res.Rate)
	}
}

func TestRun_httpPlaceholdersAndTargets(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		seen = map[string]int{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen[r.Method+" "+r.URL.RequestURI()+" "+string(body)]++
		mu.Unlock()
	}))
	defer srv.Close()
	ids := t.TempDir() + "/ids.txt"
	if err := os.WriteFile(ids, []byte("alice\nbob\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Run(t.Context(), Options{
		Targets: []Request{
			{URL: srv.URL + "/a/{seq}?r={rand:10}&u={pick:" + ids + "}"},
			{Method: "PUT", URL: srv.URL + "/b", Body: []byte("x")},
		},
		Connections: 3,
		MaxRequests: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 100 || res.Targets != 2 {
		t.Fatalf("requests %d, targets %d: want 100 over 2", res.Requests, res.Targets)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := seen["PUT /b x"]; n != 50 {
		t.Errorf("PUT /b sent %d times, want every other request: 50", n)
	}
	users := map[string]int{}
	for seq := 0; seq < 100; seq += 2 {
		found := 0
		for r := range 10 {
			for _, u := range []string{"alice", "bob"} {
				if n := seen[fmt.Sprintf("GET /a/%d?r=%d&u=%s ", seq, r, u)]; n > 0 {
					found += n
					users[u] += n
				}
			}
		}
		if found != 1 {
			t.Errorf("request %d sent %d times with r in [0, 10) and u a line of the file, want once", seq, found)
		}
	}
	if users["alice"] < 10 || users["bob"] < 10 {
		t.Errorf("users picked %v, want both often", users)
	}
}

func TestRun_httpProtocols(t *testing.T) {
	t.Parallel()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Proto)
	})
	tlsServer := func(t *testing.T, h2 bool) (*httptest.Server, *tls.Config) {
		srv := httptest.NewUnstartedServer(handler)
		srv.EnableHTTP2 = h2
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.StartTLS()
		t.Cleanup(srv.Close)
		pool := x509.NewCertPool()
		pool.AddCert(srv.Certificate())
		return srv, &tls.Config{RootCAs: pool}
	}
	tests := []struct {
		name     string
		server   func(t *testing.T) (*httptest.Server, *tls.Config)
		protocol Protocol
		want     string
	}{
		{name: "https negotiates HTTP/2", server: func(t *testing.T) (*httptest.Server, *tls.Config) { return tlsServer(t, true) }, want: "HTTP/2"},
		{name: "https without HTTP/2 on the server", server: func(t *testing.T) (*httptest.Server, *tls.Config) { return tlsServer(t, false) }, want: "HTTP/1.1"},
		{name: "https forced to HTTP/1.1", server: func(t *testing.T) (*httptest.Server, *tls.Config) { return tlsServer(t, true) }, protocol: ProtocolHTTP1, want: "HTTP/1.1"},
		{name: "h2c", server: func(t *testing.T) (*httptest.Server, *tls.Config) {
			srv := httptest.NewUnstartedServer(handler)
			srv.Config.Protocols = new(http.Protocols)
			srv.Config.Protocols.SetHTTP1(true)
			srv.Config.Protocols.SetUnencryptedHTTP2(true)
			srv.Start()
			t.Cleanup(srv.Close)
			return srv, nil
		}, protocol: ProtocolHTTP2, want: "HTTP/2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, cfg := tt.server(t)
			res, err := Run(t.Context(), Options{
				Targets: []Request{{URL: srv.URL + "/x"}}, Connections: 2, MaxRequests: 20, Protocol: tt.protocol, TLS: cfg,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Completed != 20 || res.Protocol != tt.want || res.BytesIn == 0 {
				t.Errorf("completed %d, protocol %q, bytes in %d, errors %v: want 20 over %s", res.Completed, res.Protocol, res.BytesIn, res.ErrorKinds, tt.want)
			}
		})
	}
}

func TestRun_httpErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// server starts a server and returns its base URL.
		server  func(t *testing.T) string
		opts    Options
		want    Result // the counts, status codes and error kinds
		wantErr string // an error of Run
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
			opts: Options{Connections: 2, MaxRequests: 30},
			want: Result{
				Requests: 30, Completed: 30, Errors: 30,
				StatusCodes: map[int]uint64{404: 2, 500: 28},
				ErrorKinds:  map[string]uint64{"status_4xx": 2, "status_5xx": 28},
			},
		},
		{
			name:    "unreachable target",
			server:  closedAddress,
			opts:    Options{Rate: 10, Duration: time.Second},
			wantErr: "connection refused",
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
			opts: Options{Connections: 2, MaxRequests: 6},
			want: Result{
				Requests: 6, Errors: 6,
				StatusCodes: map[int]uint64{}, ErrorKinds: map[string]uint64{ErrorKindConnectionClosed: 6},
			},
		},
		{
			name: "not HTTP",
			server: func(t *testing.T) string {
				return serve(t, func(w http.ResponseWriter, r *http.Request) {
					conn, buf, err := http.NewResponseController(w).Hijack()
					if err == nil {
						buf.WriteString("SSH-2.0-OpenSSH_9.6\r\n\r\n")
						buf.Flush()
						conn.Close()
					}
				})
			},
			opts: Options{Connections: 1, MaxRequests: 3},
			want: Result{
				Requests: 3, Errors: 3,
				StatusCodes: map[int]uint64{}, ErrorKinds: map[string]uint64{ErrorKindInvalidResponse: 3},
			},
		},
		{
			name: "untrusted certificate",
			server: func(t *testing.T) string {
				srv := httptest.NewUnstartedServer(http.NotFoundHandler())
				srv.Config.ErrorLog = log.New(io.Discard, "", 0)
				srv.StartTLS()
				t.Cleanup(srv.Close)
				return srv.URL
			},
			opts: Options{Connections: 1, MaxRequests: 2, Protocol: ProtocolHTTP1},
			want: Result{
				Requests: 2, Errors: 2,
				StatusCodes: map[int]uint64{}, ErrorKinds: map[string]uint64{ErrorKindTLS: 2},
			},
		},
		{
			name:   "body stalls past the timeout",
			server: func(t *testing.T) string { return serveStalled(t, "partial") },
			opts:   Options{Connections: 2, MaxRequests: 2, Timeout: 200 * time.Millisecond},
			want: Result{
				Requests: 2, Errors: 2,
				StatusCodes: map[int]uint64{}, ErrorKinds: map[string]uint64{ErrorKindTimeout: 2},
			},
		},
		{
			name: "body over the limit",
			server: func(t *testing.T) string {
				return serve(t, func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, 2000)) })
			},
			opts: Options{Connections: 1, MaxRequests: 2, MaxBody: 1000},
			want: Result{
				Requests: 2, Errors: 2,
				StatusCodes: map[int]uint64{}, ErrorKinds: map[string]uint64{ErrorKindBodyTooLarge: 2},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.Targets = []Request{{URL: tt.server(t) + "/{seq}"}}
			res, err := Run(t.Context(), opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("Run error = %v, want one line containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := Result{
				Requests: res.Requests, Completed: res.Completed, Errors: res.Errors,
				StatusCodes: res.StatusCodes, ErrorKinds: res.ErrorKinds,
			}
			if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", tt.want); g != w {
				t.Errorf("result:\n got %s\nwant %s", g, w)
			}
		})
	}
}

// TestRun_httpTargetDiesMidRun stops the server while the load runs: the
// requests after it fail and are counted, the run goes on to its end.
func TestRun_httpTargetDiesMidRun(t *testing.T) {
	t.Parallel()
	// The server dies after its 20th answer, and the run is stopped once
	// ten requests have failed after that: the run goes on past its
	// target's death, counting what fails, whatever the machine's speed.
	const answered = 20
	var served atomic.Int64
	died := make(chan struct{})
	// The handler reads the server through srvp: the race detector cannot
	// see that the server is stored before the load, over TCP, calls it.
	var srvp atomic.Pointer[httptest.Server]
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n := served.Add(1); {
		case n < answered:
			jsonHandler(w, r)
		case n == answered:
			jsonHandler(w, r)
			go func() {
				srv := srvp.Load()
				srv.Listener.Close()
				srv.CloseClientConnections()
				close(died)
			}()
		default:
			// Sent on a connection open before the death: never answered.
			panic(http.ErrAbortHandler)
		}
	}))
	srvp.Store(srv)
	srv.Start()
	defer srv.Close()
	stop := make(chan struct{})
	var stopped atomic.Bool
	res, err := Run(t.Context(), Options{
		Targets: []Request{{URL: srv.URL}}, Connections: 2, Duration: 10 * time.Minute, Stop: stop,
		ProgressInterval: 20 * time.Millisecond,
		Progress: func(p Progress) {
			select {
			case <-died:
				if p.Errors >= 10 && stopped.CompareAndSwap(false, true) {
					close(stop)
				}
			default:
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	failed := res.ErrorKinds[ErrorKindConnectionRefused] + res.ErrorKinds[ErrorKindConnectionClosed] + res.ErrorKinds[ErrorKindConnectionReset]
	if !stopped.Load() || res.Completed < answered-1 || res.Completed > answered || res.Errors < 10 || failed != res.Errors {
		t.Errorf("completed %d, errors %d %v: want the %d answered before the death completed, those after it failed to connect, the run going on past it",
			res.Completed, res.Errors, res.ErrorKinds, answered)
	}
}

// TestRun_httpStalledServer checks that a server that never answers cannot
// make the open model hold more than MaxInFlight requests, goroutines or
// connections, and that the generator says it fell behind.
func TestRun_httpStalledServer(t *testing.T) {
	// Not parallel: it counts the process's goroutines.
	base := serveStalled(t, "")
	const maxInFlight = 16
	var peakGoroutines atomic.Int64
	before := runtime.NumGoroutine()
	res, err := Run(t.Context(), Options{
		Targets:     []Request{{URL: base + "/"}},
		Rate:        2000,
		Duration:    600 * time.Millisecond,
		Timeout:     250 * time.Millisecond,
		MaxInFlight: maxInFlight,
		Progress: func(Progress) {
			if n := int64(runtime.NumGoroutine()); n > peakGoroutines.Load() {
				peakGoroutines.Store(n)
			}
		},
		ProgressInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.PeakInFlight != maxInFlight || res.Completed != 0 || res.ErrorKinds[ErrorKindTimeout] != res.Requests {
		t.Errorf("peak in flight %d, completed %d, error kinds %v: want %d in flight, every request timed out",
			res.PeakInFlight, res.Completed, res.ErrorKinds, maxInFlight)
	}
	// Each worker sends a request every 250ms at most: 3 rounds.
	if res.Requests > 3*maxInFlight || res.Requests+res.Dropped != 1200 || !res.Behind || res.Lag.Max < 200*time.Millisecond {
		t.Errorf("requests %d, dropped %d, behind %v, max lag %s: want at most %d sent, the rest of 1200 dropped, behind by 200ms or more",
			res.Requests, res.Dropped, res.Behind, res.Lag.Max, 3*maxInFlight)
	}
	// The bound held the rate back, not the generator; and requests that
	// timed out waited at least the timeout.
	if res.HeldBack != HeldByMaxInFlight || res.AtBound == 0 {
		t.Errorf("held back by %q (%d requests at the bound), want %q", res.HeldBack, res.AtBound, HeldByMaxInFlight)
	}
	if res.Latency.Min < 250*time.Millisecond || res.Latency.P50 < 250*time.Millisecond {
		t.Errorf("latency %+v of requests that all timed out after 250ms: want every figure at least 250ms", res.Latency)
	}
	// The server's handlers and connections are goroutines of this
	// process too: two per request outstanding, beside the workers.
	if limit := int64(before + 4*maxInFlight + 20); peakGoroutines.Load() > limit {
		t.Errorf("%d goroutines during the run, want at most %d", peakGoroutines.Load(), limit)
	}
}

// TestRun_httpStalledServerEndsOnTime runs both models against a server
// that never answers, with the default 10s timeout: the run still ends
// EndGrace after its window, the outstanding requests counted as
// unfinished, at the time they waited, in the latency.
func TestRun_httpStalledServerEndsOnTime(t *testing.T) {
	t.Parallel()
	base := serveStalled(t, "")
	const window = 500 * time.Millisecond
	for _, opts := range []Options{
		{Targets: []Request{{URL: base + "/open"}}, Rate: 40, Duration: window},
		{Targets: []Request{{URL: base + "/closed"}}, Connections: 4, Duration: window},
	} {
		t.Run(string(opts.Model()), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			res, err := Run(t.Context(), opts)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if limit := window + EndGrace + 500*time.Millisecond; took > limit || res.Elapsed > limit {
				t.Errorf("run took %s (elapsed %s), want at most %s (window + EndGrace + slack)", took, res.Elapsed, limit)
			}
			if res.Requests == 0 || res.Completed != 0 || res.ErrorKinds[ErrorKindUnfinished] != res.Requests || res.Errors != res.Requests {
				t.Errorf("requests %d, completed %d, error kinds %v: want every request unfinished", res.Requests, res.Completed, res.ErrorKinds)
			}
			if res.Latency.Min < EndGrace || res.Latency.Max < window+EndGrace-50*time.Millisecond {
				t.Errorf("latency %+v: want the unfinished requests counted at how long they waited (at least EndGrace)", res.Latency)
			}
			// The stalled requests must not hold the schedule back. A
			// generator late on a machine busy with other work (the
			// suite's packages run side by side under -race) is that
			// machine's, and the run says so rightly.
			if res.HeldBack == HeldByMaxInFlight || res.AtBound > 0 {
				t.Errorf("behind %v, held back by %q, %d requests at the in-flight bound: the stalled server held the schedule back",
					res.Behind, res.HeldBack, res.AtBound)
			}
		})
	}
}

// TestRun_httpServerClosesEveryConnection counts the connections a server
// that closes each one after its response makes the load open.
func TestRun_httpServerClosesEveryConnection(t *testing.T) {
	t.Parallel()
	base := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	})
	res, err := Run(t.Context(), Options{Targets: []Request{{URL: base}}, Rate: 200, MaxRequests: 60})
	if err != nil {
		t.Fatal(err)
	}
	// The first request may go over the connection the reachability
	// check opened before the run.
	if res.Completed != 60 || res.Opened < 59 || uint64(res.Connections) >= res.Opened {
		t.Errorf("completed %d over %d workers and %d connections opened: want 60 connections for 60 requests", res.Completed, res.Connections, res.Opened)
	}
}

func TestRun_httpCancel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		base    func(t *testing.T) string
		model   Options
		stalled bool
	}{
		{name: "fast server, open model", base: func(t *testing.T) string { return serve(t, jsonHandler) }, model: Options{Rate: 200}},
		{name: "fast server, closed model", base: func(t *testing.T) string { return serve(t, jsonHandler) }, model: Options{Connections: 4}},
		{name: "stalled server, closed model", base: func(t *testing.T) string { return serveStalled(t, "") }, model: Options{Connections: 4}, stalled: true},
		{name: "stalled server over HTTP/2", base: func(t *testing.T) string {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
			srv.Config.Protocols = new(http.Protocols)
			srv.Config.Protocols.SetUnencryptedHTTP2(true)
			srv.Start()
			t.Cleanup(srv.Close)
			return srv.URL
		}, model: Options{Connections: 4, Protocol: ProtocolHTTP2}, stalled: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := tt.base(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var canceledAt atomic.Pointer[time.Time]
			opts := tt.model
			opts.Targets = []Request{{URL: base + "/"}}
			opts.Duration, opts.Timeout, opts.ProgressInterval = time.Minute, time.Minute, 50*time.Millisecond
			opts.Progress = func(p Progress) {
				if (p.Requests >= 10 || tt.stalled && p.InFlight == 4) && canceledAt.Load() == nil {
					now := time.Now()
					canceledAt.Store(&now)
					cancel()
				}
			}
			res, err := Run(ctx, opts)
			if err != nil {
				t.Fatalf("Run after cancel: %v, want the partial result and no error", err)
			}
			at := canceledAt.Load()
			if at == nil {
				t.Fatalf("never canceled: %+v", res)
			}
			if after := time.Since(*at); after > 2*time.Second {
				t.Errorf("Run returned %s after cancel, want promptly", after)
			}
			if !res.Interrupted || res.Duration <= 0 || res.Duration > res.Elapsed {
				t.Errorf("interrupted %v, duration %s, elapsed %s: want an interrupted run, sending until the cancel", res.Interrupted, res.Duration, res.Elapsed)
			}
			if tt.stalled && (res.Completed != 0 || res.ErrorKinds[ErrorKindCanceled] != res.Requests || res.Requests != 4) {
				t.Errorf("completed %d, error kinds %v, requests %d: want the 4 outstanding requests canceled", res.Completed, res.ErrorKinds, res.Requests)
			}
			if !tt.stalled && (res.Requests < 10 || res.Completed+res.ErrorKinds[ErrorKindCanceled] != res.Requests) {
				t.Errorf("requests %d, completed %d, error kinds %v: want 10 or more, each completed or canceled", res.Requests, res.Completed, res.ErrorKinds)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	wrap := func(err error) error { return &url.Error{Op: "Get", URL: "http://h/", Err: err} }
	tests := []struct {
		name     string
		err      error
		canceled bool
		want     string
	}{
		{name: "deadline", err: wrap(context.DeadlineExceeded), want: ErrorKindTimeout},
		{name: "net timeout", err: &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, want: ErrorKindTimeout},
		{name: "refused", err: &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, want: ErrorKindConnectionRefused},
		{name: "reset", err: &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, want: ErrorKindConnectionReset},
		{name: "broken pipe", err: &net.OpError{Op: "write", Err: os.NewSyscallError("write", syscall.EPIPE)}, want: ErrorKindConnectionReset},
		{name: "eof", err: io.EOF, want: ErrorKindConnectionClosed},
		{name: "unexpected eof", err: wrap(io.ErrUnexpectedEOF), want: ErrorKindConnectionClosed},
		{name: "dns", err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "nope.invalid", IsNotFound: true}}, want: ErrorKindDNS},
		{name: "unknown authority", err: wrap(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), want: ErrorKindTLS},
		{name: "hostname mismatch", err: x509.HostnameError{Host: "h"}, want: ErrorKindTLS},
		{name: "not tls", err: tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, want: ErrorKindTLS},
		{name: "body too large", err: errBodyTooLarge, want: ErrorKindBodyTooLarge},
		{name: "malformed response", err: wrap(errors.New("malformed HTTP response")), want: ErrorKindOther},
		{name: "run canceled wins", err: context.DeadlineExceeded, canceled: true, want: ErrorKindCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			if tt.canceled {
				cancel()
			}
			defer cancel()
			if got := kindNames[classify(ctx, tt.err)]; got != tt.want {
				t.Errorf("classify(%v) = %q, want %q", tt.err, got, tt.want)
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

// TestRun_httpStop ends a run early through Options.Stop, as a caller
// that decides the window's length as it goes does: the run ends as at
// its Duration, the outstanding requests complete, nothing is an error
// and the run is not interrupted.
func TestRun_httpStop(t *testing.T) {
	t.Parallel()
	for _, model := range []Options{{Rate: 200}, {Connections: 4}} {
		base := serve(t, jsonHandler)
		stop := make(chan struct{})
		opts := model
		opts.Targets = []Request{{URL: base + "/"}}
		opts.Duration, opts.Stop = time.Minute, stop
		time.AfterFunc(300*time.Millisecond, func() { close(stop) })
		start := time.Now()
		res, err := Run(t.Context(), opts)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("rate %v connections %d: Run took %s after Stop at 300ms, want it to end then", model.Rate, model.Connections, took)
		}
		if res.Interrupted || res.Errors != 0 || res.Completed == 0 || res.Completed != res.Requests {
			t.Errorf("rate %v connections %d: interrupted %v, %d requests, %d completed, %d errors %v: want every request completed, no error",
				model.Rate, model.Connections, res.Interrupted, res.Requests, res.Completed, res.Errors, res.ErrorKinds)
		}
		// The window is what ran, not the longest it could have run.
		// (Whether the pacer's sends were late, Behind, is the machine's
		// say, not Stop's: a starved CI core makes them late.)
		if res.Duration < 250*time.Millisecond || res.Duration > time.Second || res.Dropped != 0 {
			t.Errorf("rate %v connections %d: duration %s, dropped %d: want the 300ms the window ran, nothing dropped",
				model.Rate, model.Connections, res.Duration, res.Dropped)
		}
		if model.Rate > 0 && (res.Rate < 150 || res.Rate > 250) {
			t.Errorf("achieved rate %.1f/s, want about the 200/s asked over the window that ran", res.Rate)
		}
		// Nothing due after the window is sent, however late it ends.
		if due := uint64(res.Duration.Seconds()*model.Rate) + 1; model.Rate > 0 && res.Requests > due {
			t.Errorf("%d requests sent, want at most the %d due in the %s window", res.Requests, due, res.Duration)
		}
	}
}

// TestRun_httpHead: a HEAD response gives the length of a body it does
// not send; reading that body would wait for the timeout, request after
// request. Closed and open model, each read path.
func TestRun_httpHead(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1024")
		if r.Method != http.MethodHead {
			w.Write(make([]byte, 1024))
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"closed model", Options{Connections: 2, MaxRequests: 50}},
		{"open model", Options{Rate: 500, MaxRequests: 50}},
		{"without keep-alive", Options{Connections: 2, MaxRequests: 20, NoKeepAlive: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Targets = []Request{{Method: http.MethodHead, URL: srv.URL + "/item"}}
			opts.Timeout = 5 * time.Second
			res, err := Run(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			want := uint64(opts.MaxRequests)
			if res.Completed != want || res.Errors != 0 || res.StatusCodes[200] != want {
				t.Errorf("completed, errors, 200s = %d, %d, %d; want %d, 0, %d (errors %v)", res.Completed, res.Errors, res.StatusCodes[200], want, want, res.ErrorKinds)
			}
			if res.Latency.Max >= opts.Timeout {
				t.Errorf("slowest HEAD took %s: it waited for a body that never comes", res.Latency.Max)
			}
		})
	}
}
