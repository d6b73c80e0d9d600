package watch

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
