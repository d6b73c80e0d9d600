package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/testserver"
	"github.com/heapscope/heapscope/internal/watch/config"
)

func TestWebhook_Send(t *testing.T) {
	tests := []struct {
		name     string
		replies  []int // status per attempt; the last repeats
		retries  int
		wantErr  string
		attempts int32
	}{
		{"accepted at once", []int{200}, 3, "", 1},
		{"retried through server errors", []int{503, 502, 204}, 3, "", 3},
		{"rate limited then accepted", []int{429, 200}, 3, "", 2},
		{"gives up after the retries", []int{500}, 2, "500 Internal Server Error", 3},
		{"a refusal is final", []int{400}, 3, "400 Bad Request", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			var got Event
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				status := tt.replies[min(i, len(tt.replies)-1)]
				if r.Header.Get("Content-Type") != "application/json" {
					t.Errorf("Content-Type = %q", r.Header.Get("Content-Type"))
				}
				if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
					t.Errorf("decode body: %v", err)
				}
				w.WriteHeader(status)
			}))
			defer srv.Close()
			w := &Webhook{URL: srv.URL, Retries: tt.retries, backoff: time.Millisecond}
			ev := Event{Text: "memory>=80% on api: 82%", Kind: "bundle", Target: "http://127.0.0.1:6060/debug/pprof/", Trigger: "memory>=80%", Value: 0.82}
			err := w.Send(context.Background(), ev)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Send: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Send error = %v, want one saying %q", err, tt.wantErr)
			}
			if n.Load() != tt.attempts {
				t.Errorf("attempts = %d, want %d", n.Load(), tt.attempts)
			}
			if got.Text != ev.Text || got.Trigger != ev.Trigger || got.Value != ev.Value {
				t.Errorf("receiver got %+v, want %+v", got, ev)
			}
		})
	}
}

func TestWebhook_SendTimesOut(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(stop)
	w := &Webhook{URL: srv.URL, Timeout: 50 * time.Millisecond, Retries: 1, backoff: time.Millisecond}
	start := time.Now()
	err := w.Send(context.Background(), Event{Text: "x"})
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("Send error = %v, want a deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Send took %s with a 50 ms timeout and one retry", d)
	}
}

// TestRun_hungWebhookHoldsNoBundle fires three triggers of one target at
// once with a webhook receiver that never answers: the three bundles
// must be captured while the first event's delivery still hangs (order,
// not wall clock), and at the end watch must stop within its drain
// deadline, counting what it could not deliver.
func TestRun_hungWebhookHoldsNoBundle(t *testing.T) {
	leaky := startExample(t, "leaky")
	var received atomic.Int32
	release := make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hook.Close()
	defer close(release)

	var triggers []config.Trigger
	for _, n := range []string{"1", "2", "3"} {
		triggers = append(triggers, config.Trigger{Expr: "goroutines>=" + n, Pos: "test"})
	}
	cfg, err := config.ForURLs([]string{leaky.URL}, config.Settings{
		Every: time.Hour, Window: time.Second, Timeout: 10 * time.Second, Poll: 200 * time.Millisecond, Triggers: triggers,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Webhook = &config.Webhook{URL: hook.URL, Timeout: time.Hour}
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w, err := New(Options{Config: cfg, Store: st, Version: "test", BundleWindow: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	bundles := testserver.WaitFor(t, 60*time.Second, "the bundles", func() ([]store.Entry, bool) {
		h, _ := st.History(store.Query{})
		return h.Bundles, len(h.Bundles) == 3
	})
	testserver.WaitFor(t, time.Minute, "the webhook called", func() (int32, bool) { return received.Load(), received.Load() > 0 })
	if n := received.Load(); n != 1 {
		t.Errorf("the receiver saw %d requests by the third bundle; want 1, the first event's, still hanging", n)
	}
	for _, b := range bundles {
		if b.CaptureSeconds > 10 {
			t.Errorf("bundle %s took %.1f s from its crossing: a hung webhook held it", b.Path, b.CaptureSeconds)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(outboxDrain + 10*time.Second):
		t.Fatalf("Run still running %s after its context ended: the webhook drain has no deadline", outboxDrain+10*time.Second)
	}
	failed := testutil.ToFloat64(w.metrics.webhook.WithLabelValues("failed"))
	dropped := testutil.ToFloat64(w.metrics.webhook.WithLabelValues("dropped"))
	delivered := testutil.ToFloat64(w.metrics.webhook.WithLabelValues("delivered"))
	// The two other bundles' events were queued behind the hung one; a
	// problem the captures found may have queued one more.
	if failed != 1 || dropped < 2 || delivered != 0 {
		t.Errorf("webhook events: %v failed, %v dropped, %v delivered; want the hung one failed at the drain deadline and the queued ones (two bundles' at least) dropped", failed, dropped, delivered)
	}
}

// TestOutbox_fullQueueDropsTheOldest: while a receiver holds the first
// event, the target's queue fills; each event past outboxDepth drops the
// oldest waiting one, counted, and the rest arrive in order once the
// receiver answers.
func TestOutbox_fullQueueDropsTheOldest(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var got []string
	first := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev Event
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			t.Errorf("decode body: %v", err)
		}
		mu.Lock()
		got = append(got, ev.Text)
		n := len(got)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release
		}
	}))
	defer srv.Close()
	outcomes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outcomes_total", Help: "by outcome"}, []string{"outcome"})
	o := newOutbox(&Webhook{URL: srv.URL, Timeout: time.Minute}, slog.New(slog.DiscardHandler), outcomes)
	const target, extra = "http://127.0.0.1:6060/debug/pprof/", 3
	o.post(Event{Text: "event 0", Target: target})
	<-first // event 0 in flight, the queue empty
	for i := 1; i <= outboxDepth+extra; i++ {
		o.post(Event{Text: fmt.Sprintf("event %d", i), Target: target})
	}
	if n := testutil.ToFloat64(outcomes.WithLabelValues("dropped")); n != extra {
		t.Errorf("dropped %v events, want %d", n, extra)
	}
	close(release)
	o.drain(time.Minute)
	want := []string{"event 0"}
	for i := 1 + extra; i <= outboxDepth+extra; i++ {
		want = append(want, fmt.Sprintf("event %d", i))
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("receiver got %q, want %q: the oldest waiting dropped, the rest in order", got, want)
	}
	if n := testutil.ToFloat64(outcomes.WithLabelValues("delivered")); n != float64(len(want)) {
		t.Errorf("delivered %v, want %d", n, len(want))
	}
}
