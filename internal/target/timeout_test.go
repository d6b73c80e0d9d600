package target

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"
)

// slow answers "ok" after delay, or never when delay is negative, until done
// is closed or the client goes away.
func slow(delay time.Duration, done <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var after <-chan time.Time
		if delay >= 0 {
			t := time.NewTimer(delay)
			defer t.Stop()
			after = t.C
		}
		select {
		case <-after:
			io.WriteString(w, "ok")
		case <-done:
		case <-r.Context().Done():
		}
	})
}

func TestClient_Profile_timeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	tests := []struct {
		name    string
		delay   time.Duration
		query   url.Values
		setting string // Options.TimeoutSetting
		wantErr []string
	}{
		{name: "never answers", delay: -1, wantErr: []string{"fetch heap profile", "no answer within 200ms", "raise --timeout"}},
		{name: "the setting named", delay: -1, setting: "timeout of group api", wantErr: []string{"no answer within 200ms (raise timeout of group api if"}},
		{name: "answers too late", delay: 300 * time.Millisecond, wantErr: []string{"no answer within 200ms"}},
		{name: "seconds extend the timeout", delay: 300 * time.Millisecond, query: url.Values{"seconds": {"1"}}},
		{name: "seconds shown in the timeout", delay: -1, query: url.Values{"seconds": {"1"}}, wantErr: []string{"no answer within 1.2s"}},
		{name: "bad seconds do not extend", delay: 300 * time.Millisecond, query: url.Values{"seconds": {"x"}}, wantErr: []string{"no answer within 200ms"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			done := make(chan struct{})
			srv := newServer(t, slow(tc.delay, done))
			t.Cleanup(func() { close(done) }) // before srv.Close, which waits for the handler
			c := newClient(t, Options{BaseURL: srv.URL, Timeout: timeout, TimeoutSetting: tc.setting})
			body, err := c.Profile(t.Context(), "heap", tc.query)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Profile: %v", err)
				}
				if string(body) != "ok" {
					t.Errorf("body = %q, want %q", body, "ok")
				}
				return
			}
			checkErr(t, err, tc.wantErr...)
			var ue *UnreachableError
			if errors.As(err, &ue) {
				t.Errorf("a timeout is reported as unreachable: %v", err)
			}
		})
	}
}

func TestClient_HeapDebug_timeout(t *testing.T) {
	done := make(chan struct{})
	srv := newServer(t, slow(-1, done))
	t.Cleanup(func() { close(done) })
	c := newClient(t, Options{BaseURL: srv.URL, Timeout: 100 * time.Millisecond})
	_, err := c.MemStats(t.Context(), false)
	checkErr(t, err, "fetch MemStats", "no answer within 100ms")
}

func TestClient_Profile_canceled(t *testing.T) {
	tests := []struct {
		name string
		// cancel cancels the request's context; arrived is closed when
		// the request reaches the service.
		cancel func(cancel context.CancelFunc, arrived <-chan struct{})
	}{
		{
			name:   "before the request",
			cancel: func(cancel context.CancelFunc, _ <-chan struct{}) { cancel() },
		},
		{
			name: "while waiting for the answer",
			cancel: func(cancel context.CancelFunc, arrived <-chan struct{}) {
				go func() { <-arrived; cancel() }()
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			done, arrived := make(chan struct{}), make(chan struct{})
			var once sync.Once
			hang := slow(-1, done)
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				once.Do(func() { close(arrived) })
				hang.ServeHTTP(w, r)
			}))
			t.Cleanup(func() { close(done) })
			c := newClient(t, Options{BaseURL: srv.URL, Timeout: 5 * time.Second})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			tc.cancel(cancel, arrived)
			_, err := c.Profile(ctx, "heap", nil)
			checkErr(t, err, "fetch heap profile", "canceled")
			if !errors.Is(err, context.Canceled) {
				t.Errorf("errors.Is(%v, context.Canceled) = false", err)
			}
			var ue *UnreachableError
			if errors.As(err, &ue) {
				t.Errorf("a canceled request is reported as unreachable: %v", err)
			}
		})
	}
}

func TestClient_unreachable(t *testing.T) {
	srv := newServer(t, pprofMux())
	base := srv.URL
	srv.Close()
	tests := []struct {
		name  string
		base  string
		fetch func(context.Context, *Client) error
		want  []string
	}{
		{
			name: "profile",
			base: base,
			fetch: func(ctx context.Context, c *Client) error {
				_, err := c.Profile(ctx, "heap", nil)
				return err
			},
			want: []string{"fetch heap profile", "cannot reach " + base + "/debug/pprof/heap", "is the service running"},
		},
		{
			name: "MemStats",
			base: base,
			fetch: func(ctx context.Context, c *Client) error {
				_, err := c.MemStats(ctx, false)
				return err
			},
			want: []string{"fetch MemStats", "cannot reach"},
		},
		{
			name: "metrics",
			base: base,
			fetch: func(ctx context.Context, c *Client) error {
				_, err := c.Metrics(ctx)
				return err
			},
			want: []string{"fetch metrics", "cannot reach " + base + "/metrics"},
		},
		{
			name: "credentials are not shown",
			base: strings.Replace(base, "http://", "http://user:hunter2@", 1),
			fetch: func(ctx context.Context, c *Client) error {
				_, err := c.Profile(ctx, "heap", nil)
				return err
			},
			want: []string{"cannot reach", "user:xxxxx@"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, Options{BaseURL: tc.base, Timeout: 5 * time.Second})
			err := tc.fetch(t.Context(), c)
			checkErr(t, err, tc.want...)
			var ue *UnreachableError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v is not an *UnreachableError", err)
			}
			if ue.Err == nil {
				t.Error("UnreachableError.Err is nil")
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}

func TestClient_StatusError_redacted(t *testing.T) {
	srv := newServer(t, pprofMux())
	c := newClient(t, Options{BaseURL: strings.Replace(srv.URL, "http://", "http://user:hunter2@", 1)})
	_, err := c.Profile(t.Context(), "nosuch", nil)
	checkErr(t, err, "404", "user:xxxxx@")
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error shows the password: %v", err)
	}
}

// TestClient_Profile_busy runs the profilers net/http/pprof would start in
// this very process, so the handlers find them taken.
func TestClient_Profile_busy(t *testing.T) {
	tests := []struct {
		name    string
		start   func() (stop func(), err error)
		profile string
		wantIs  error
		want    []string
	}{
		{
			name: "CPU profile",
			start: func() (func(), error) {
				return pprof.StopCPUProfile, pprof.StartCPUProfile(io.Discard)
			},
			profile: "profile",
			wantIs:  ErrCPUProfileBusy,
			want:    []string{"fetch CPU profile", "already being CPU-profiled", "try again"},
		},
		{
			name: "execution trace",
			start: func() (func(), error) {
				return trace.Stop, trace.Start(io.Discard)
			},
			profile: "trace",
			want:    []string{"fetch trace profile", "500 Internal Server Error", "Could not enable tracing"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// An error means the profiler runs already (go test -cpuprofile
			// or -trace), which serves the test as well.
			if stop, err := tc.start(); err == nil {
				defer stop()
			}
			srv := newServer(t, pprofMux())
			c := newClient(t, Options{BaseURL: srv.URL, Timeout: 5 * time.Second})
			body, err := c.Profile(t.Context(), tc.profile, url.Values{"seconds": {"1"}})
			checkErr(t, err, tc.want...)
			if body != nil {
				t.Errorf("got %d bytes with the error", len(body))
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.wantIs)
			}
			if tc.wantIs == nil && errors.Is(err, ErrCPUProfileBusy) {
				t.Errorf("errors.Is(%v, ErrCPUProfileBusy) = true, want false", err)
			}
		})
	}
}
