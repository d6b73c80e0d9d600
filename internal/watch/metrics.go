package watch

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/heapscope/heapscope/internal/fleet"
	"github.com/heapscope/heapscope/internal/server"
)

// metrics are watch's own figures, served on /metrics of its listen
// address. They live in a registry of their own, so two watchers in one
// process (tests) do not collide.
type metrics struct {
	registry *prometheus.Registry

	captures       *prometheus.CounterVec   // kind, outcome
	captureSeconds *prometheus.HistogramVec // kind
	captureBytes   *prometheus.CounterVec   // kind
	triggers       *prometheus.CounterVec   // expr
	scheduleLag    prometheus.Histogram
	missed         prometheus.Counter
	targets        prometheus.Gauge
	storeBytes     prometheus.Gauge
	restarts       *prometheus.CounterVec // oom_kill
	pyroscope      *prometheus.CounterVec // outcome
	webhook        *prometheus.CounterVec // outcome
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		captures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heapscope_watch_captures_total",
			Help: "Captures finished, by kind (run, bundle) and outcome (complete, partial, failed).",
		}, []string{"kind", "outcome"}),
		captureSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "heapscope_watch_capture_duration_seconds",
			Help:    "Time from a capture's start to its stored directory, by kind.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}, []string{"kind"}),
		captureBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heapscope_watch_capture_bytes_total",
			Help: "Bytes stored by captures, by kind.",
		}, []string{"kind"}),
		triggers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heapscope_watch_triggers_fired_total",
			Help: "Triggers that fired, by expression.",
		}, []string{"expr"}),
		scheduleLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "heapscope_watch_schedule_lag_seconds",
			Help:    "How late scheduled captures started after their slot.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60},
		}),
		missed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "heapscope_watch_missed_slots_total",
			Help: "Scheduled slots not captured, counted as they come: the target's previous capture still waited for a concurrency slot or still ran (or, in a fleet, no one captured the slot within two lease periods).",
		}),
		targets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "heapscope_watch_targets",
			Help: "Targets watched.",
		}),
		storeBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "heapscope_watch_store_bytes",
			Help: "Bytes of the stored runs and bundles: the size of their files (their objects in a shared store), as the store indexes them; updated at start, after each capture and after retention.",
		}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heapscope_watch_target_restarts_total",
			Help: "Target restarts seen, by whether an OOM kill preceded them.",
		}, []string{"oom_kill"}),
		pyroscope: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heapscope_watch_pyroscope_pushes_total",
			Help: "Captures pushed to Pyroscope (the config's pyroscope section), by outcome (ok, failed).",
		}, []string{"outcome"}),
		webhook: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "heapscope_watch_webhook_events_total",
			Help: "Webhook events by outcome: delivered, failed (after its retries) or dropped (its target's queue full, or left at shutdown).",
		}, []string{"outcome"}),
	}
	m.registry.MustRegister(m.captures, m.captureSeconds, m.captureBytes, m.triggers,
		m.scheduleLag, m.missed, m.targets, m.storeBytes, m.restarts, m.pyroscope, m.webhook,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves watch's /metrics, /healthz and its own pprof under
// /debug/pprof/. /healthz answers 200 with status "ok" while the store
// takes the captures, and 503 with status "not ok" once
// UnhealthyCommits commits in a row have failed, until one succeeds;
// the body has the store's health and each target's as JSON. A target's
// failures (it is down, say) are its own: they do not make the watcher
// unhealthy.
func (w *Watcher) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(w.metrics.registry, promhttp.HandlerOpts{}))
	// watch's own profiles: a watcher is a Go service like the ones it
	// watches.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, r *http.Request) {
		sh := w.StoreHealth()
		status, code := "ok", http.StatusOK
		if sh.ConsecutiveFailures >= UnhealthyCommits {
			status, code = "not ok", http.StatusServiceUnavailable
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("X-Content-Type-Options", "nosniff")
		rw.WriteHeader(code)
		json.NewEncoder(rw).Encode(struct {
			Status  string      `json:"status"`
			Store   StoreHealth `json:"store"`
			Targets []Health    `json:"targets"`
		}{status, sh, w.Health()})
	})
	return mux
}

// UnhealthyCommits is how many commits into the store must fail in a row
// for /healthz to say the watcher is not ok: captures are made and lost.
const UnhealthyCommits = 3

// StoreHealth is how the store has taken the captures' commits.
type StoreHealth struct {
	LastSuccess         time.Time `json:"last_success,omitzero"`
	LastError           string    `json:"last_error,omitempty"`
	LastErrorTime       time.Time `json:"last_error_time,omitzero"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
}

// StoreHealth returns how the store has taken the captures' commits.
func (w *Watcher) StoreHealth() StoreHealth {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.commits
}

// commitDone notes a commit's outcome. A guard's refusal (the target
// moved to another watcher of the fleet) is no failure of the store's.
func (w *Watcher) commitDone(err error) {
	if errors.Is(err, fleet.ErrClaimLost) || errors.Is(err, fleet.ErrNotOwner) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.commits.LastSuccess = w.opts.now()
		w.commits.ConsecutiveFailures = 0
		return
	}
	w.commits.LastError, w.commits.LastErrorTime = err.Error(), w.opts.now()
	w.commits.ConsecutiveFailures++
}

// Health is how one target's captures have gone.
type Health struct {
	Target              string    `json:"target"`
	LastSuccess         time.Time `json:"last_success,omitzero"`
	LastError           string    `json:"last_error,omitempty"`
	LastErrorTime       time.Time `json:"last_error_time,omitzero"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
	NextSlot            time.Time `json:"next_slot,omitzero"`
	// Unarmed are the target's triggers that can never fire on it, each
	// with why (memory>=80% on a target without a memory limit).
	Unarmed []string `json:"unarmed,omitempty"`
	// Elsewhere is true for a target another watcher of the fleet
	// captures: this one only follows it.
	Elsewhere bool `json:"elsewhere,omitempty"`
}

// Health returns every watched target's health, sorted by target. The
// sort is done once the watcher's lock is let go: with thousands of
// targets, the captures and triggers that take it do not wait for it.
func (w *Watcher) Health() []Health {
	w.mu.Lock()
	hs := make([]Health, 0, len(w.targets))
	for _, t := range w.targets {
		h := t.health
		h.Elsewhere = !t.owned && w.opts.Fleet != nil
		hs = append(hs, h)
	}
	w.mu.Unlock()
	slices.SortFunc(hs, func(a, b Health) int { return strings.Compare(a.Target, b.Target) })
	return hs
}

// ServerHealth is Health as the history server takes it, by target: the
// server of watch --listen shows what the store alone cannot say.
func (w *Watcher) ServerHealth() map[string]server.TargetHealth {
	out := map[string]server.TargetHealth{}
	for _, h := range w.Health() {
		if h.Elsewhere {
			continue // the store says what its owner captured
		}
		out[h.Target] = server.TargetHealth{LastError: h.LastError, NextSlot: h.NextSlot, Failures: h.ConsecutiveFailures, Unarmed: h.Unarmed}
	}
	return out
}
