// Package service holds the plumbing the bundled example services share: the
// mux that mounts net/http/pprof, Prometheus metrics and a health check beside
// a service's own routes, a server with timeouts and graceful shutdown, and the
// command line (flags with environment fallback, validation, exit codes) of
// every example's main.
package service

import (
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// UnmatchedRoute is the route label of requests that matched none of the
// service's patterns.
const UnmatchedRoute = "unmatched"

// NewMux returns the handler of a whole example service: h serves every path
// not claimed by the common routes, which are
//
//	/debug/pprof/…  net/http/pprof: index, cmdline, profile, symbol, trace and the named profiles
//	/metrics        Prometheus metrics from a registry of the service's own
//	/health         200 "ok"
//
// Requests served by h are counted and timed in the metrics
// http_requests_total and http_request_duration_seconds, labelled by route
// (the ServeMux pattern h matched, see Request.Pattern, or UnmatchedRoute)
// and status code. name becomes the constant label "service".
//
// Nothing is registered on http.DefaultServeMux, and every call builds a new
// registry, so several services can live in one process.
func NewMux(name string, h http.Handler) http.Handler {
	mux := http.NewServeMux()

	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	for _, p := range []string{"allocs", "block", "goroutine", "heap", "mutex", "threadcreate"} {
		mux.Handle("/debug/pprof/"+p, pprof.Handler(p))
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m := newMetrics(name, reg)
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))

	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})

	svc := m.instrument(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Dispatch by hand rather than mounting h at "/": a catch-all
		// pattern costs allocations on every request of the service.
		if p := r.URL.Path; p == "/metrics" || p == "/health" || p == "/debug/pprof" || strings.HasPrefix(p, "/debug/pprof/") {
			mux.ServeHTTP(w, r)
			return
		}
		svc.ServeHTTP(w, r)
	})
}

// metrics counts and times the requests a service's handler serves.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec

	mu     sync.RWMutex
	series map[routeCode]series // resolved children, so the hot path does not allocate label slices

	recorders sync.Pool // of *statusRecorder
}

type routeCode struct {
	route string
	code  int
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func newMetrics(name string, reg prometheus.Registerer) *metrics {
	labels := prometheus.Labels{"service": name}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "http_requests_total",
			Help:        "Requests served by the service's own routes, by route and status code.",
			ConstLabels: labels,
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "http_request_duration_seconds",
			Help:        "Time to serve a request of the service's own routes, by route and status code.",
			ConstLabels: labels,
			Buckets:     []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
		}, []string{"route", "code"}),
		series: make(map[routeCode]series),
	}
	m.recorders.New = func() any { return new(statusRecorder) }
	reg.MustRegister(m.requests, m.duration)
	return m
}

// instrument wraps h so that each request it serves is counted and timed.
func (m *metrics) instrument(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := m.recorders.Get().(*statusRecorder)
		rec.ResponseWriter, rec.code = w, 0
		h.ServeHTTP(rec, r)
		code := rec.code
		if code == 0 {
			code = http.StatusOK
		}
		rec.ResponseWriter = nil
		m.recorders.Put(rec)

		route := r.Pattern
		if route == "" {
			route = UnmatchedRoute
		}
		s := m.lookup(routeCode{route, code})
		s.requests.Inc()
		s.duration.Observe(time.Since(start).Seconds())
	})
}

// lookup returns the metric children of a route and code, creating them on
// first use. Routes come from a service's patterns and codes from its
// handlers, so the set stays small.
func (m *metrics) lookup(k routeCode) series {
	m.mu.RLock()
	s, ok := m.series[k]
	m.mu.RUnlock()
	if ok {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.series[k]; ok {
		return s
	}
	code := strconv.Itoa(k.code)
	s = series{
		requests: m.requests.WithLabelValues(k.route, code),
		duration: m.duration.WithLabelValues(k.route, code),
	}
	m.series[k] = s
	return s
}

// statusRecorder remembers the status code a handler sends.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 && code >= 200 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
