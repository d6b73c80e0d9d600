package load

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The tests in this file run inside synctest bubbles: time is fake and
// advances only when every goroutine is blocked, so pacing and latencies are
// exact. The transport is in memory.

// fakeServer is an in-memory http.RoundTripper that records when each
// request reached it and answers through handle.
type fakeServer struct {
	start  time.Time
	handle func(req *http.Request) (*http.Response, error)

	mu   sync.Mutex
	at   []time.Duration // arrival offsets from start
	urls []string
}

func newFakeServer(handle func(*http.Request) (*http.Response, error)) *fakeServer {
	return &fakeServer{start: time.Now(), handle: handle}
}

func (s *fakeServer) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.at = append(s.at, time.Since(s.start))
	s.urls = append(s.urls, req.URL.String())
	s.mu.Unlock()
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return s.handle(req)
}

func (s *fakeServer) client() *http.Client { return &http.Client{Transport: s} }

func (s *fakeServer) arrivals() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.at)
}

// ok answers at once with 200 and body "ok".
func ok(req *http.Request) (*http.Response, error) {
	return response(req, http.StatusOK, "ok"), nil
}

// hang answers when the request's context ends, with its error.
func hang(req *http.Request) (*http.Response, error) {
	<-req.Context().Done()
	return nil, req.Context().Err()
}

func response(req *http.Request, status int, body string) *http.Response {
	return &http.Response{
		StatusCode: status,
		Header:     http.Header{},
		Body:       io.NopCloser(strings.NewReader(body)),
		Request:    req,
	}
}

// sleepCtx sleeps for d or until ctx ends, and returns ctx's error.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

func TestRun_pacing(t *testing.T) {
	tests := []struct {
		name     string
		rate     float64
		duration time.Duration
		want     int
	}{
		{name: "100 per second for 1s", rate: 100, duration: time.Second, want: 100},
		{name: "1000 per second for 1.5s", rate: 1000, duration: 1500 * time.Millisecond, want: 1500},
		{name: "3 per second for 2s", rate: 3, duration: 2 * time.Second, want: 6},
		{name: "7 per second for 1s", rate: 7, duration: time.Second, want: 7},
		{name: "0.1 per second for 20s", rate: 0.1, duration: 20 * time.Second, want: 2},
		{name: "1 per second for 2.5s", rate: 1, duration: 2500 * time.Millisecond, want: 3},
		{name: "slower than the window", rate: 0.5, duration: time.Second, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFakeServer(ok)
				res, err := Run(t.Context(), Options{
					Request:  Request{URL: "http://h/"},
					Rate:     tt.rate,
					Duration: tt.duration,
					Client:   srv.client(),
				})
				if err != nil {
					t.Fatal(err)
				}
				n := uint64(tt.want)
				want := Result{
					Requests: n, Completed: n, Duration: tt.duration, TargetRate: tt.rate,
					StatusCodes: map[int]uint64{200: n}, ErrorKinds: map[string]uint64{},
					BytesIn: 2 * n, Rate: float64(n) / tt.duration.Seconds(),
				}
				checkResult(t, res, want)
				at := srv.arrivals()
				if len(at) != tt.want {
					t.Fatalf("server saw %d requests, want %d", len(at), tt.want)
				}
				for i, got := range at {
					if want := time.Duration(math.Round(float64(i) * 1e9 / tt.rate)); got != want {
						t.Fatalf("request %d sent at %s, want %s", i, got, want)
					}
				}
			})
		})
	}
}

// lateClock is the system clock whose SleepUntil oversleeps by late[i] on
// its i-th call, like a scheduler starved of CPU.
type lateClock struct {
	systemClock
	late  map[int]time.Duration
	calls int
}

func (c *lateClock) SleepUntil(ctx context.Context, t time.Time) bool {
	lag := c.late[c.calls]
	c.calls++
	return c.systemClock.SleepUntil(ctx, t.Add(lag))
}

func TestRun_lateScheduler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(ok)
		clk := &lateClock{late: map[int]time.Duration{3: ms(400)}}
		res, err := run(t.Context(), Options{
			Request:  Request{URL: "http://h/"},
			Rate:     10,
			Duration: time.Second,
			Client:   srv.client(),
		}, clk)
		if err != nil {
			t.Fatal(err)
		}
		// Request 3 leaves 400ms late; 4, 5 and 6, overdue by then, leave
		// with it; 7 onwards are on time again: no drift.
		want := []time.Duration{0, ms(100), ms(200), ms(700), ms(700), ms(700), ms(700), ms(700), ms(800), ms(900)}
		if got := srv.arrivals(); !slices.Equal(got, want) {
			t.Errorf("arrivals = %v, want %v", got, want)
		}
		// Latency counts from the intended time: 400, 300, 200, 100 and
		// six zeros.
		checkLatency(t, res.Latency, LatencySummary{
			Min: 0, Mean: ms(100), P50: 0, P90: ms(300), P99: ms(400), P999: ms(400), Max: ms(400),
		})
		if res.Requests != 10 || res.Completed != 10 || res.Duration != time.Second {
			t.Errorf("requests, completed, duration = %d, %d, %s, want 10, 10, 1s", res.Requests, res.Completed, res.Duration)
		}
	})
}

func TestRun_stalledServer(t *testing.T) {
	tests := []struct {
		name         string
		handle       func(start time.Time) func(*http.Request) (*http.Response, error)
		wantLatency  LatencySummary
		wantDuration time.Duration
	}{
		{
			// The server freezes for the first 500ms (a long GC pause, say)
			// and then answers everything at once.
			name: "frozen for 500ms",
			handle: func(start time.Time) func(*http.Request) (*http.Response, error) {
				return func(req *http.Request) (*http.Response, error) {
					if err := sleepCtx(req.Context(), time.Until(start.Add(ms(500)))); err != nil {
						return nil, err
					}
					return ok(req)
				}
			},
			// 500, 400, 300, 200, 100 and five zeros.
			wantLatency:  LatencySummary{Min: 0, Mean: ms(150), P50: 0, P90: ms(400), P99: ms(500), P999: ms(500), Max: ms(500)},
			wantDuration: time.Second,
		},
		{
			// One request at a time, 150ms each, while they arrive every
			// 100ms: a queue builds up and request i ends at 150(i+1)ms.
			name: "serial 150ms per request",
			handle: func(start time.Time) func(*http.Request) (*http.Response, error) {
				var mu sync.Mutex
				free := start
				return func(req *http.Request) (*http.Response, error) {
					mu.Lock()
					done := free.Add(ms(150))
					if now := time.Now(); now.After(free) {
						done = now.Add(ms(150))
					}
					free = done
					mu.Unlock()
					if err := sleepCtx(req.Context(), time.Until(done)); err != nil {
						return nil, err
					}
					return ok(req)
				}
			},
			// 150 + 50i for i in 0..9.
			wantLatency:  LatencySummary{Min: ms(150), Mean: ms(375), P50: ms(350), P90: ms(550), P99: ms(600), P999: ms(600), Max: ms(600)},
			wantDuration: 1500 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFakeServer(tt.handle(time.Now()))
				res, err := Run(t.Context(), Options{
					Request:  Request{URL: "http://h/"},
					Rate:     10,
					Duration: time.Second,
					Client:   srv.client(),
				})
				if err != nil {
					t.Fatal(err)
				}
				checkLatency(t, res.Latency, tt.wantLatency)
				if res.Requests != 10 || res.Completed != 10 || res.Errors != 0 || res.Duration != tt.wantDuration {
					t.Errorf("requests, completed, errors, duration = %d, %d, %d, %s, want 10, 10, 0, %s",
						res.Requests, res.Completed, res.Errors, res.Duration, tt.wantDuration)
				}
			})
		})
	}
}

func TestRun_limits(t *testing.T) {
	tests := []struct {
		name        string
		handle      func(*http.Request) (*http.Response, error)
		rate        float64
		timeout     time.Duration
		maxInFlight int
		want        Result
		wantSent    []time.Duration
	}{
		{
			name:    "every request times out",
			handle:  hang,
			rate:    10,
			timeout: ms(250),
			want: Result{
				Requests: 10, Errors: 10, Duration: ms(1150),
				StatusCodes: map[int]uint64{}, ErrorKinds: map[string]uint64{ErrorKindTimeout: 10},
			},
		},
		{
			name:        "in-flight bound drops what falls due",
			handle:      hang,
			rate:        10,
			timeout:     10 * time.Second,
			maxInFlight: 3,
			want: Result{
				Requests: 3, Errors: 3, Dropped: 7, Duration: ms(10200),
				StatusCodes: map[int]uint64{}, ErrorKinds: map[string]uint64{ErrorKindTimeout: 3},
			},
			wantSent: []time.Duration{0, ms(100), ms(200)},
		},
		{
			// Each request holds one of the two slots for 250ms: the
			// requests due at 200, 500 and 800ms find both taken.
			name:        "in-flight slots are released",
			handle:      hang,
			rate:        10,
			timeout:     ms(250),
			maxInFlight: 2,
			want: Result{
				Requests: 7, Errors: 7, Dropped: 3, Duration: ms(1150),
				StatusCodes: map[int]uint64{}, ErrorKinds: map[string]uint64{ErrorKindTimeout: 7},
			},
			wantSent: []time.Duration{0, ms(100), ms(300), ms(400), ms(600), ms(700), ms(900)},
		},
		{
			name: "status codes of 400 and more are errors",
			handle: func(req *http.Request) (*http.Response, error) {
				codes := map[string]int{"/0": 200, "/1": 302, "/2": 404, "/3": 500, "/4": 503}
				return response(req, codes[req.URL.Path], "abc"), nil
			},
			rate: 5,
			want: Result{
				Requests: 5, Completed: 5, Errors: 3, Duration: time.Second, Rate: 5,
				StatusCodes: map[int]uint64{200: 1, 302: 1, 404: 1, 500: 1, 503: 1},
				ErrorKinds:  map[string]uint64{"status_4xx": 1, "status_5xx": 2},
				BytesIn:     15,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFakeServer(tt.handle)
				res, err := Run(t.Context(), Options{
					Request:     Request{URL: "http://h/{seq}"},
					Rate:        tt.rate,
					Duration:    time.Second,
					Timeout:     tt.timeout,
					MaxInFlight: tt.maxInFlight,
					Client:      srv.client(),
				})
				if err != nil {
					t.Fatal(err)
				}
				tt.want.TargetRate = tt.rate
				checkResult(t, res, tt.want)
				if tt.wantSent != nil {
					if got := srv.arrivals(); !slices.Equal(got, tt.wantSent) {
						t.Errorf("arrivals = %v, want %v", got, tt.wantSent)
					}
				}
			})
		})
	}
}

func TestRun_cancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(hang)
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(ms(450), cancel)
		res, err := Run(ctx, Options{
			Request:  Request{URL: "http://h/"},
			Rate:     10,
			Duration: time.Minute,
			Client:   srv.client(),
		})
		if err != nil {
			t.Fatalf("Run after cancel: %v, want the partial result and no error", err)
		}
		checkResult(t, res, Result{
			Requests: 5, Errors: 5, Duration: ms(450), TargetRate: 10,
			StatusCodes: map[int]uint64{}, ErrorKinds: map[string]uint64{ErrorKindCanceled: 5},
		})
	})
}

func TestRun_progress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(ok)
		var calls []Progress
		res, err := Run(t.Context(), Options{
			Request:  Request{URL: "http://h/"},
			Rate:     10,
			Duration: time.Second,
			Client:   srv.client(),
			Progress: func(p Progress) { calls = append(calls, p) },
		})
		if err != nil {
			t.Fatal(err)
		}
		// Ticks at 200, 400, 600 and 800ms, maybe one at 1s as the run
		// ends, and the final counts.
		if len(calls) != 5 && len(calls) != 6 {
			t.Fatalf("%d progress calls, want 5 or 6: %+v", len(calls), calls)
		}
		for i, p := range calls[:4] {
			if want := ms(200 * float64(i+1)); p.Elapsed != want {
				t.Errorf("call %d at %s, want %s", i, p.Elapsed, want)
			}
			// Requests are due every 100ms: at 200ms, 2 or 3 have left.
			if lo := uint64(2 * (i + 1)); p.Sent < lo || p.Sent > lo+1 || p.Completed > p.Sent {
				t.Errorf("call %d: %+v, want %d or %d sent", i, p, lo, lo+1)
			}
		}
		last := calls[len(calls)-1]
		want := Progress{Elapsed: res.Duration, Sent: res.Requests, Completed: res.Completed, Errors: res.Errors, Dropped: res.Dropped}
		if last != want || last.Sent != 10 {
			t.Errorf("last progress = %+v, want %+v", last, want)
		}
	})
}

func TestRun_template(t *testing.T) {
	urls := func(t *testing.T, seed int64, maxInFlight int, handle func(*http.Request) (*http.Response, error)) []string {
		t.Helper()
		var got []string
		synctest.Test(t, func(t *testing.T) {
			srv := newFakeServer(handle)
			_, err := Run(t.Context(), Options{
				Request:     Request{URL: "http://h/{seq}/{rand:1000}"},
				Rate:        50,
				Duration:    time.Second,
				Seed:        seed,
				MaxInFlight: maxInFlight,
				Client:      srv.client(),
			})
			if err != nil {
				t.Fatal(err)
			}
			got = srv.urls
		})
		return got
	}
	first := urls(t, 42, 0, ok)
	if len(first) != 50 {
		t.Fatalf("%d requests, want 50", len(first))
	}
	for i, u := range first {
		var seq, n int
		if _, err := fmt.Sscanf(u, "http://h/%d/%d", &seq, &n); err != nil || seq != i || n < 0 || n >= 1000 {
			t.Errorf("request %d went to %q, want seq %d and a number below 1000", i, u, i)
		}
	}
	if again := urls(t, 42, 0, ok); !slices.Equal(again, first) {
		t.Errorf("seed 42 gave different URLs on a second run")
	}
	if other := urls(t, 43, 0, ok); slices.Equal(other, first) {
		t.Errorf("seeds 42 and 43 gave the same URLs")
	}
	// One request at a time, each taking 30ms: every other one is dropped,
	// and those sent keep the URLs of their place in the schedule.
	slow := func(req *http.Request) (*http.Response, error) {
		if err := sleepCtx(req.Context(), ms(30)); err != nil {
			return nil, err
		}
		return ok(req)
	}
	sparse := urls(t, 42, 1, slow)
	if len(sparse) != 25 {
		t.Errorf("%d requests sent one at a time, want 25", len(sparse))
	}
	for _, u := range sparse {
		var seq int
		if _, err := fmt.Sscanf(u, "http://h/%d/", &seq); err != nil || seq >= len(first) || u != first[seq] {
			t.Errorf("request to %q, want the URL of its place in the schedule", u)
		}
	}
}

func TestRun_options(t *testing.T) {
	valid := Options{Request: Request{URL: "http://h/"}, Rate: 1, Duration: time.Second}
	tests := []struct {
		name    string
		edit    func(o *Options)
		wantErr string
	}{
		{name: "zero rate", edit: func(o *Options) { o.Rate = 0 }, wantErr: "run load: rate 0 per second must be a positive number"},
		{name: "negative rate", edit: func(o *Options) { o.Rate = -5 }, wantErr: "rate -5 per second"},
		{name: "NaN rate", edit: func(o *Options) { o.Rate = math.NaN() }, wantErr: "rate NaN per second"},
		{name: "infinite rate", edit: func(o *Options) { o.Rate = math.Inf(1) }, wantErr: "rate +Inf per second"},
		{name: "zero duration", edit: func(o *Options) { o.Duration = 0 }, wantErr: "run load: duration 0s must be positive"},
		{name: "negative timeout", edit: func(o *Options) { o.Timeout = -time.Second }, wantErr: "timeout -1s must not be negative"},
		{name: "negative in-flight", edit: func(o *Options) { o.MaxInFlight = -1 }, wantErr: "max in-flight -1 must not be negative"},
		{name: "no request", edit: func(o *Options) { o.Request = Request{} }, wantErr: "run load: request: URL is empty"},
		{name: "bad method", edit: func(o *Options) { o.Request.Method = "GET /" }, wantErr: `run load: request: method "GET /"`},
		{name: "bad placeholder", edit: func(o *Options) { o.Request.URL = "http://h/{x}" }, wantErr: "unknown placeholder {x}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid
			tt.edit(&o)
			_, err := Run(t.Context(), o)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Run error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func checkResult(t *testing.T, got, want Result) {
	t.Helper()
	gotLat, wantLat := got.Latency, want.Latency
	got.Latency, want.Latency = LatencySummary{}, LatencySummary{}
	gs, ws := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want)
	if gs != ws {
		t.Errorf("result:\n got %s\nwant %s", gs, ws)
	}
	if wantLat != (LatencySummary{}) {
		checkLatency(t, gotLat, wantLat)
	}
}

// checkLatency compares latency summaries, allowing the histogram's error
// on the percentiles.
func checkLatency(t *testing.T, got, want LatencySummary) {
	t.Helper()
	exact := got.Min == want.Min && got.Mean == want.Mean && got.Max == want.Max
	close := within(got.P50, want.P50, HistogramMaxRelativeError) && within(got.P90, want.P90, HistogramMaxRelativeError) &&
		within(got.P99, want.P99, HistogramMaxRelativeError) && within(got.P999, want.P999, HistogramMaxRelativeError)
	if !exact || !close {
		t.Errorf("latency = %+v, want %+v", got, want)
	}
}
