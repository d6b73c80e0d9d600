package run

import (
	"net/http"
	"net/http/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/load"
	"github.com/heapscope/heapscope/internal/target"
)

// TestProfile_WarmupRunsBeforeTheWindow checks that a warm-up loads the
// service before the window opens and that its requests are not the
// window's: the window's load and per-request figures count only its own.
func TestProfile_WarmupRunsBeforeTheWindow(t *testing.T) {
	var served atomic.Int64
	var firstWindowRequest atomic.Int64 // served count when the first snapshot was asked for
	heap := pprof.Handler("heap")
	mux := pprofMux(map[string]http.HandlerFunc{
		"/work": func(w http.ResponseWriter, r *http.Request) { served.Add(1) },
		"/debug/pprof/heap": func(w http.ResponseWriter, r *http.Request) {
			firstWindowRequest.CompareAndSwap(0, served.Load()+1)
			heap.ServeHTTP(w, r)
		},
	})
	srv := serve(t, mux)

	began := time.Now()
	res, _, err := Profile(t.Context(), Config{
		Target: target.Options{BaseURL: srv.URL}, Duration: 500 * time.Millisecond, Snapshots: 2,
		Load:   &load.Options{Targets: []load.Request{{Method: "GET", URL: srv.URL + "/work"}}, Rate: 100},
		Warmup: 400 * time.Millisecond, OutDir: t.TempDir(), Version: "test",
	})
	if err != nil {
		t.Fatalf("Profile: %v", err)
	}
	if got := firstWindowRequest.Load() - 1; got < 30 {
		t.Errorf("the service had served %d requests when the window opened, want the warm-up's (about 40)", got)
	}
	if !res.Window.Start.After(began.Add(300 * time.Millisecond)) {
		t.Errorf("window started %s after the call, want after the 400ms warm-up", res.Window.Start.Sub(began))
	}
	if res.Load == nil || res.Load.Requests > 60 {
		t.Errorf("window load %+v, want only the window's (about 50) requests", res.Load)
	}
	if total := served.Load(); res.Load != nil && uint64(total) <= res.Load.Requests {
		t.Errorf("service served %d requests, the window's load %d: the warm-up's are missing", total, res.Load.Requests)
	}
}

func TestConfig_ValidateWarmup(t *testing.T) {
	lo := &load.Options{Targets: []load.Request{{URL: "http://127.0.0.1:1/"}}, Rate: 10}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"without load", Config{Duration: time.Second, Warmup: time.Second}, "give the load too"},
		{"negative", Config{Duration: time.Second, Warmup: -time.Second, Load: lo}, "between 0 and"},
		{"too long", Config{Duration: time.Second, Warmup: time.Hour, Load: lo}, "between 0 and"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.prepare()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
