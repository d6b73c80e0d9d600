package load

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The tests in this file run inside synctest bubbles: time is fake and
// advances only when every goroutine is blocked, so the schedule, lags and
// latencies are exact. The client is in memory.

// fakeClient answers every request through handle, and records when each
// request reached it.
type fakeClient struct {
	start  time.Time
	handle func(ctx context.Context, url string) (status int, err error)

	mu       sync.Mutex
	at       []time.Duration // arrival offsets from start
	urls     []string
	sessions int
}

func newFakeClient(handle func(ctx context.Context, url string) (int, error)) *fakeClient {
	return &fakeClient{start: time.Now(), handle: handle}
}

func (c *fakeClient) check(context.Context) error { return nil }
func (c *fakeClient) abort()                      {}
func (c *fakeClient) bytes() (in, out uint64)     { return 0, 0 }
func (c *fakeClient) opened() uint64              { return 0 }
func (c *fakeClient) close()                      {}

func (c *fakeClient) session() session {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessions++
	return fakeSession{c}
}

type fakeSession struct{ c *fakeClient }

func (s fakeSession) send(ctx context.Context, t *target, url []byte, _ time.Time) (int, bool, error) {
	u := string(url)
	if t.constURL != nil {
		u = string(t.constURL)
	}
	s.c.mu.Lock()
	s.c.at = append(s.c.at, time.Since(s.c.start))
	s.c.urls = append(s.c.urls, u)
	s.c.mu.Unlock()
	status, err := s.c.handle(ctx, u)
	return status, false, err
}

func (fakeSession) warm(*target) {}

func (c *fakeClient) arrivals() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.at)
}

// instant answers 200 at once.
func instant(context.Context, string) (int, error) { return 200, nil }

// after answers 200 after d, or fails when ctx ends first.
func after(d time.Duration) func(context.Context, string) (int, error) {
	return func(ctx context.Context, _ string) (int, error) {
		if err := sleepCtx(ctx, d); err != nil {
			return 0, err
		}
		return 200, nil
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

// fakeRun runs opts against a fake client, with the pacer's sleeps going
// through sleep when it is not nil.
func fakeRun(t *testing.T, ctx context.Context, opts Options, c *fakeClient, sleep sleeper) Result {
	t.Helper()
	if len(opts.Targets) == 0 {
		opts.Targets = []Request{{URL: "http://h/"}}
	}
	g, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	g.newClient = func() client { return c }
	if sleep != nil {
		g.sleeper = func() sleeper { return sleep }
	}
	res, err := g.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestGenerator_Run_openSchedule(t *testing.T) {
	tests := []struct {
		name     string
		sched    Schedule
		duration time.Duration
		max      uint64
		want     uint64
	}{
		{name: "100 per second for 1s", sched: Schedule{Rate: 100}, duration: time.Second, want: 100},
		{name: "1000 per second for 1.5s", sched: Schedule{Rate: 1000}, duration: 1500 * time.Millisecond, want: 1500},
		{name: "7 per second for 1s", sched: Schedule{Rate: 7}, duration: time.Second, want: 7},
		{name: "0.1 per second for 20s", sched: Schedule{Rate: 0.1}, duration: 20 * time.Second, want: 2},
		{name: "slower than the window", sched: Schedule{Rate: 0.5}, duration: time.Second, want: 1},
		{name: "ramp 2s to 100 per second in 3s", sched: Schedule{Rate: 100, Ramp: 2 * time.Second}, duration: 3 * time.Second, want: 200},
		{name: "request count ends first", sched: Schedule{Rate: 100}, duration: time.Second, max: 30, want: 30},
		{name: "request count alone", sched: Schedule{Rate: 50}, max: 25, want: 25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newFakeClient(instant)
				res := fakeRun(t, t.Context(), Options{
					Rate: tt.sched.Rate, Ramp: tt.sched.Ramp, Duration: tt.duration, MaxRequests: tt.max,
				}, c, nil)
				at := c.arrivals()
				if uint64(len(at)) != tt.want {
					t.Fatalf("%d requests, want %d", len(at), tt.want)
				}
				for i, got := range at {
					if want := tt.sched.At(uint64(i)); got != want {
						t.Fatalf("request %d sent at %s, want %s", i, got, want)
					}
				}
				wantDuration := tt.duration
				if tt.max > 0 && (tt.duration == 0 || tt.max < tt.sched.Count(tt.duration)) {
					wantDuration = tt.sched.At(tt.max)
				}
				if res.Requests != tt.want || res.Completed != tt.want || res.Dropped != 0 || res.Duration != wantDuration {
					t.Errorf("requests, completed, dropped, duration = %d, %d, %d, %s; want %d, %d, 0, %s",
						res.Requests, res.Completed, res.Dropped, res.Duration, tt.want, tt.want, wantDuration)
				}
				if want := float64(tt.want) / wantDuration.Seconds(); res.Rate != want {
					t.Errorf("rate %g, want %g", res.Rate, want)
				}
				if res.Lag != (LagSummary{}) || res.Behind || res.Latency.Max != 0 || res.PeakInFlight != 1 {
					t.Errorf("lag %+v, behind %v, max latency %s, peak in flight %d: want a generator on time and instant answers one at a time",
						res.Lag, res.Behind, res.Latency.Max, res.PeakInFlight)
				}
			})
		})
	}
}

// lateSleeper is the pacer's clock, oversleeping by late[i] on its i-th
// wait, like a generator starved of CPU.
type lateSleeper struct {
	timerSleeper
	late  map[int]time.Duration
	calls int
}

func (s *lateSleeper) SleepUntil(t time.Time, stop <-chan struct{}) bool {
	lag := s.late[s.calls]
	s.calls++
	return s.timerSleeper.SleepUntil(t.Add(lag), stop)
}

// TestGenerator_Run_coordinatedOmission checks that latency counts from the
// intended send time, whether the generator or the service is late.
func TestGenerator_Run_coordinatedOmission(t *testing.T) {
	tests := []struct {
		name     string
		handle   func(start time.Time) func(context.Context, string) (int, error)
		late     map[int]time.Duration
		inFlight int
		// want
		arrivals     []time.Duration
		latency      LatencySummary
		lag          LagSummary
		behind       bool
		requests     uint64
		dropped      uint64
		elapsed      time.Duration
		peakInFlight int // when set
	}{
		{
			// Request 3 leaves 400ms late; 4, 5 and 6, overdue by then,
			// leave with it; 7 onwards are on time again: no drift.
			name:     "generator late once",
			handle:   func(time.Time) func(context.Context, string) (int, error) { return instant },
			late:     map[int]time.Duration{3: ms(400)},
			arrivals: []time.Duration{0, ms(100), ms(200), ms(700), ms(700), ms(700), ms(700), ms(700), ms(800), ms(900)},
			// 400, 300, 200, 100 and six zeros, in latency and in lag.
			latency:  LatencySummary{Min: 0, Mean: ms(100), P50: 0, P90: ms(300), P99: ms(400), P999: ms(400), Max: ms(400)},
			lag:      LagSummary{Mean: ms(100), P99: ms(400), Max: ms(400)},
			behind:   true,
			requests: 10, elapsed: time.Second,
		},
		{
			// The service freezes for the first 500ms (a long GC pause,
			// say) and then answers everything at once: the requests left
			// on time, but for the 200µs that requests 2, 3 and 4 waited
			// for a worker to come back before one was started (the run
			// starts with two), and waited.
			name: "service frozen for 500ms",
			handle: func(start time.Time) func(context.Context, string) (int, error) {
				return func(ctx context.Context, _ string) (int, error) {
					return 200, sleepCtx(ctx, time.Until(start.Add(ms(500))))
				}
			},
			arrivals: []time.Duration{0, ms(100), ms(200.2), ms(300.2), ms(400.2), ms(500), ms(600), ms(700), ms(800), ms(900)},
			// 500, 400, 300, 200, 100 and five zeros, from the intended
			// times.
			latency:  LatencySummary{Min: 0, Mean: ms(150), P50: 0, P90: ms(400), P99: ms(500), P999: ms(500), Max: ms(500)},
			lag:      LagSummary{Mean: ms(0.06), P99: ms(0.2), Max: ms(0.2)},
			requests: 10, elapsed: time.Second,
		},
		{
			// One request at a time, 150ms each, due every 100ms: each
			// waits for the only worker, the lag grows by 50ms a request,
			// and the three still waiting when the window ends are
			// dropped.
			name:     "one in flight, service slower than the rate",
			handle:   func(time.Time) func(context.Context, string) (int, error) { return after(ms(150)) },
			inFlight: 1,
			arrivals: []time.Duration{0, ms(150), ms(300), ms(450), ms(600), ms(750), ms(900)},
			// 150 + 50i for i in 0..6, from the intended times.
			latency:  LatencySummary{Min: ms(150), Mean: ms(300), P50: ms(300), P90: ms(400), P99: ms(450), P999: ms(450), Max: ms(450)},
			lag:      LagSummary{Mean: ms(150), P99: ms(300), Max: ms(300)},
			behind:   true,
			requests: 7, dropped: 3, elapsed: 1050 * time.Millisecond, peakInFlight: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newFakeClient(tt.handle(time.Now()))
				var sleep sleeper
				if tt.late != nil {
					sleep = &lateSleeper{late: tt.late}
				}
				res := fakeRun(t, t.Context(), Options{Rate: 10, Duration: time.Second, MaxInFlight: tt.inFlight}, c, sleep)
				if got := c.arrivals(); !slices.Equal(got, tt.arrivals) {
					t.Errorf("arrivals = %v, want %v", got, tt.arrivals)
				}
				checkLatency(t, "latency", res.Latency, tt.latency)
				if !within(res.Lag.P99, tt.lag.P99, HistogramMaxRelativeError) || res.Lag.Mean != tt.lag.Mean || res.Lag.Max != tt.lag.Max {
					t.Errorf("lag = %+v, want %+v", res.Lag, tt.lag)
				}
				if res.Behind != tt.behind || res.Requests != tt.requests || res.Completed != tt.requests || res.Dropped != tt.dropped {
					t.Errorf("behind, requests, completed, dropped = %v, %d, %d, %d; want %v, %d, %d, %d",
						res.Behind, res.Requests, res.Completed, res.Dropped, tt.behind, tt.requests, tt.requests, tt.dropped)
				}
				if res.Duration != time.Second || res.Elapsed != tt.elapsed || tt.peakInFlight > 0 && res.PeakInFlight != tt.peakInFlight {
					t.Errorf("duration, elapsed, peak in flight = %s, %s, %d; want 1s, %s, %d",
						res.Duration, res.Elapsed, res.PeakInFlight, tt.elapsed, tt.peakInFlight)
				}
			})
		})
	}
}

func TestGenerator_Run_closedModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newFakeClient(after(ms(100)))
		res := fakeRun(t, t.Context(), Options{
			Targets:     []Request{{URL: "http://h/{seq}"}},
			Connections: 3,
			Duration:    time.Second,
		}, c, nil)
		// Three connections, 100ms a request, back to back for 1s.
		if res.Requests != 30 || res.Completed != 30 || c.sessions != 3 || res.PeakInFlight != 3 {
			t.Errorf("requests, completed, sessions, peak in flight = %d, %d, %d, %d; want 30, 30, 3, 3",
				res.Requests, res.Completed, c.sessions, res.PeakInFlight)
		}
		checkLatency(t, "latency", res.Latency, LatencySummary{Min: ms(100), Mean: ms(100), P50: ms(100), P90: ms(100), P99: ms(100), P999: ms(100), Max: ms(100)})
		if res.Model != ModelClosed || res.Duration != time.Second || res.Rate != 30 || res.Lag != (LagSummary{}) {
			t.Errorf("model %s, duration %s, rate %g, lag %+v; want closed, 1s, 30/s, none", res.Model, res.Duration, res.Rate, res.Lag)
		}
		// Every sequence number once.
		c.mu.Lock()
		defer c.mu.Unlock()
		urls := slices.Sorted(slices.Values(c.urls))
		want := make([]string, 30)
		for i := range want {
			want[i] = fmt.Sprintf("http://h/%d", i)
		}
		slices.Sort(want)
		if !slices.Equal(urls, want) {
			t.Errorf("URLs %v, want http://h/0 … http://h/29 once each", urls)
		}
	})
}

func TestGenerator_Run_closedModelRequestCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newFakeClient(after(ms(10)))
		res := fakeRun(t, t.Context(), Options{Connections: 4, MaxRequests: 10}, c, nil)
		// 4, 4 and 2 requests in three rounds of 10ms.
		if res.Requests != 10 || res.Duration != ms(30) || res.Elapsed != ms(30) {
			t.Errorf("requests, duration, elapsed = %d, %s, %s; want 10, 30ms, 30ms", res.Requests, res.Duration, res.Elapsed)
		}
	})
}

func TestGenerator_Run_interrupted(t *testing.T) {
	for _, model := range []Options{{Rate: 100}, {Connections: 5}} {
		t.Run(string(model.Model()), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// A service that never answers.
				c := newFakeClient(func(ctx context.Context, _ string) (int, error) {
					<-ctx.Done()
					return 0, ctx.Err()
				})
				ctx, cancel := context.WithCancel(t.Context())
				time.AfterFunc(ms(455), cancel)
				model.Duration = time.Minute
				res := fakeRun(t, ctx, model, c, nil)
				want := uint64(5) // one per connection
				if model.Rate > 0 {
					want = 46 // due at 0, 10, … 450ms
				}
				if !res.Interrupted || res.Duration != ms(455) || res.Elapsed != ms(455) {
					t.Errorf("interrupted, duration, elapsed = %v, %s, %s; want true, 455ms, 455ms", res.Interrupted, res.Duration, res.Elapsed)
				}
				if res.Requests != want || res.ErrorKinds[ErrorKindCanceled] != want || res.Completed != 0 || res.Dropped != 0 {
					t.Errorf("requests %d, completed %d, dropped %d, error kinds %v; want %d canceled",
						res.Requests, res.Completed, res.Dropped, res.ErrorKinds, want)
				}
			})
		})
	}
}

func TestGenerator_Run_progress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls []Progress
		c := newFakeClient(after(ms(20)))
		res := fakeRun(t, t.Context(), Options{
			Rate: 100, Duration: time.Second, ProgressInterval: ms(253),
			Progress: func(p Progress) { calls = append(calls, p) },
		}, c, nil)
		// The run ends at 1010ms, when the last request, due at 990ms, is
		// answered.
		if len(calls) != 4 {
			t.Fatalf("%d progress calls, want 3 during the run and a last one: %+v", len(calls), calls)
		}
		for i, p := range calls[:3] {
			// At 253ms·(i+1), the requests due 20ms earlier or more are
			// done, and the two due since are in flight.
			el := ms(253 * float64(i+1))
			done := uint64((el-ms(20))/ms(10)) + 1
			if p.Elapsed != el || p.Requests != done || p.Duration != time.Second || p.InFlight != 2 || p.Rate < 90 || p.Rate > 110 {
				t.Errorf("progress %d = %+v, want elapsed %s, %d done, 2 in flight, about 100/s", i, p, el, done)
			}
		}
		last := calls[3]
		if last.Requests != res.Requests || last.Requests != 100 || last.Elapsed != res.Elapsed || last.InFlight != 0 {
			t.Errorf("last progress %+v, want the final counts of %+v", last, res)
		}
	})
}

func TestGenerator_Run_series(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newFakeClient(func(ctx context.Context, url string) (int, error) {
			if url == "http://h/25" {
				return 500, nil
			}
			return 200, sleepCtx(ctx, ms(50))
		})
		res := fakeRun(t, t.Context(), Options{
			Targets: []Request{{URL: "http://h/{seq}"}}, Rate: 10, Duration: 3 * time.Second, Series: true,
		}, c, nil)
		want := []Second{
			{Sent: 10, Done: 10, P50: ms(50), P90: ms(50), P99: ms(50), Max: ms(50)},
			{Sent: 10, Done: 10, P50: ms(50), P90: ms(50), P99: ms(50), Max: ms(50)},
			{Sent: 10, Done: 10, Errors: 1, P50: ms(50), P90: ms(50), P99: ms(50), Max: ms(50)},
		}
		if len(res.Series) != len(want) {
			t.Fatalf("series %+v, want %d seconds", res.Series, len(want))
		}
		for i, s := range res.Series {
			w := want[i]
			if s.Sent != w.Sent || s.Done != w.Done || s.Errors != w.Errors || !within(s.P50, w.P50, HistogramMaxRelativeError) || s.Max != w.Max {
				t.Errorf("second %d = %+v, want %+v", i, s, w)
			}
		}
	})
}

// TestGenerator_Run_urlsIndependentOfModel checks that the same seed gives
// the same URL to the same request number in both models.
func TestGenerator_Run_urlsIndependentOfModel(t *testing.T) {
	urls := func(opts Options) map[string]bool {
		var got map[string]bool
		synctest.Test(t, func(t *testing.T) {
			c := newFakeClient(after(ms(1)))
			opts.Targets = []Request{{URL: "http://h/{seq}/{rand:1000}"}}
			opts.MaxRequests = 200
			fakeRun(t, t.Context(), opts, c, nil)
			got = map[string]bool{}
			for _, u := range c.urls {
				got[u] = true
			}
		})
		return got
	}
	open := urls(Options{Rate: 1000, Seed: 42})
	closed := urls(Options{Connections: 7, Seed: 42})
	other := urls(Options{Connections: 7, Seed: 43})
	if len(open) != 200 || fmt.Sprint(open) != fmt.Sprint(closed) {
		t.Errorf("open and closed models gave different URLs with the same seed")
	}
	if fmt.Sprint(other) == fmt.Sprint(closed) {
		t.Errorf("seeds 42 and 43 gave the same URLs")
	}
}

func checkLatency(t *testing.T, what string, got, want LatencySummary) {
	t.Helper()
	exact := got.Min == want.Min && got.Mean == want.Mean && got.Max == want.Max
	close := within(got.P50, want.P50, HistogramMaxRelativeError) && within(got.P90, want.P90, HistogramMaxRelativeError) &&
		within(got.P99, want.P99, HistogramMaxRelativeError) && within(got.P999, want.P999, HistogramMaxRelativeError)
	if !exact || !close {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

// within reports whether got is within rel of want, or 1ns.
func within(got, want time.Duration, rel float64) bool {
	d := got - want
	if d < 0 {
		d = -d
	}
	return float64(d) <= rel*float64(want)+1
}
