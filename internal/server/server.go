// Package server is heapscope's history server: a JSON API under /api/v1/
// (described by the OpenAPI document at /api/v1/openapi.json) over a
// watch store — targets with their health, derived series, runs and
// bundles, raw profiles, findings, trigger events — for people and
// scripts who look at what watch collected.
//
// It only reads: the store, and the run directories the store's index
// names. It never fetches a URL a request gives. It binds loopback unless
// credentials are configured (CheckListen), sends no cookies, and every
// response carries security headers whose Content-Security-Policy allows
// no inline script.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/webguard"
)

// Options configure a Server.
type Options struct {
	// Store is the watch store served.
	Store store.Store
	// Auth, when it holds credentials, is required of every request.
	Auth *Auth
	// Loopback says the server listens on loopback only: requests must
	// then name its own address (webguard's check against DNS
	// rebinding). A server with Auth accepts any Host.
	Loopback bool
	// Health, when set, reports the watcher's own view of its targets
	// (watch --listen serves both): the targets route merges it in.
	Health func() map[string]TargetHealth
	// Limits bound what one request may ask for; zero fields take the
	// defaults.
	Limits Limits
	// Log receives one line per failed request; slog's default when nil.
	Log *slog.Logger
	// now replaces time.Now (tests).
	now func() time.Time
}

// Limits bound the work of one request.
type Limits struct {
	// MaxRange is the longest time range a request may span.
	MaxRange time.Duration
	// MaxEntries is the most runs or bundles a list returns.
	MaxEntries int
	// MaxPoints is the most points a series returns.
	MaxPoints int
	// MaxRangeRuns is the most runs a merge, or a side of a diff, reads.
	MaxRangeRuns int
	// MaxMergeBytes is the most stored bytes of profiles a merge reads.
	MaxMergeBytes int64
	// MergeTimeout bounds the time a merge takes.
	MergeTimeout time.Duration
}

// The default limits.
const (
	DefaultMaxRange   = 400 * 24 * time.Hour
	DefaultMaxEntries = 10000
	DefaultMaxPoints  = 100000
)

// TargetHealth is the watcher's view of a target: what the store alone
// cannot say.
type TargetHealth struct {
	// LastError is the last capture's error, empty after a success.
	LastError string `json:"last_error,omitempty"`
	// NextSlot is when the next scheduled capture starts.
	NextSlot time.Time `json:"next_slot,omitzero"`
	// Failures is how many captures in a row failed.
	Failures int `json:"consecutive_failures,omitempty"`
	// Unarmed are the triggers that can never fire on the target, each
	// with why.
	Unarmed []string `json:"unarmed,omitempty"`
}

// Server serves a store. It is an http.Handler.
type Server struct {
	opts    Options
	log     *slog.Logger
	handler http.Handler
	// runViews and mergedViews keep the view servers of stored runs and
	// of merges.
	runViews, mergedViews viewCache
	// heavy holds a slot per CPU for the requests that read many
	// profiles (merges, diffs): the rest wait their turn.
	heavy chan struct{}
}

// MaxDiffRuns bounds the runs of each side of a diff: compare reads them
// all at once, and its tests need far fewer.
const MaxDiffRuns = 200

// acquire takes a slot of the heavy requests, waiting at most until ctx
// ends; release gives it back.
func (s *Server) acquire(ctx context.Context) (release func(), err error) {
	select {
	case s.heavy <- struct{}{}:
		return func() { <-s.heavy }, nil
	case <-ctx.Done():
		return nil, &requestError{http.StatusServiceUnavailable, errors.New("the server is busy with other merges and diffs: try again")}
	}
}

// New makes a Server.
func New(opts Options) (*Server, error) {
	if opts.Store == nil {
		return nil, errors.New("server: no store")
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	l := &opts.Limits
	if l.MaxRange <= 0 {
		l.MaxRange = DefaultMaxRange
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxPoints <= 0 {
		l.MaxPoints = DefaultMaxPoints
	}
	if l.MaxRangeRuns <= 0 {
		l.MaxRangeRuns = DefaultMaxRangeRuns
	}
	if l.MaxMergeBytes <= 0 {
		l.MaxMergeBytes = DefaultMaxMergeBytes
	}
	if l.MergeTimeout <= 0 {
		l.MergeTimeout = DefaultMergeTimeout
	}
	s := &Server{opts: opts, log: opts.Log, heavy: make(chan struct{}, runtime.GOMAXPROCS(0))}
	mux := http.NewServeMux()
	s.routes(mux)
	var h http.Handler = mux
	if !opts.Auth.Empty() {
		h = opts.Auth.require(h)
	}
	s.handler = webguard.Handler(h, webguard.Options{AnyHost: !opts.Loopback, ContentSecurityPolicy: ContentSecurityPolicy})
	return s, nil
}

// ContentSecurityPolicy is the policy of the server's responses: its own
// scripts and styles from files, never inline; images from itself or
// data: URLs; no plugins, no framing, forms that post only back.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// ServeHTTP serves a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// routes registers every route; each API route is in openapi.json, which
// a test holds to this list.
func (s *Server) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/openapi.json", s.openAPI)
	mux.HandleFunc("GET /api/v1/targets", s.targets)
	mux.HandleFunc("GET /api/v1/series", s.series)
	mux.HandleFunc("GET /api/v1/runs", s.runs)
	mux.HandleFunc("GET /api/v1/events", s.events)
	mux.HandleFunc("GET /api/v1/findings", s.findings)
	mux.HandleFunc("GET /api/v1/problems", s.problems)
	mux.HandleFunc("GET /api/v1/profile", s.profile)
	mux.HandleFunc("GET /api/v1/diff", s.diff)
	mux.HandleFunc("GET /api/v1/merge", s.merge)
	mux.Handle("GET /flame", withNonce(http.HandlerFunc(s.flamePage)))
	mux.HandleFunc("GET /merged", s.mergedPprof)
	mux.Handle("/merged/", withNonce(http.HandlerFunc(s.mergedPprof)))
	mux.Handle("GET /compare", withNonce(http.HandlerFunc(s.comparePage)))
	mux.HandleFunc("GET /{$}", s.targetsPage)
	mux.HandleFunc("GET /target", s.targetPage)
	mux.HandleFunc("GET /problem", s.problemPage)
	mux.HandleFunc("GET /findings", s.findingsPage)
	mux.HandleFunc("/run/", s.runPage)
	mux.Handle("GET /static/", staticFiles())
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, fmt.Errorf("%s %s: the API only reads: GET", r.Method, r.URL.Path))
			return
		}
		writeError(w, http.StatusNotFound, fmt.Errorf("no route %s %s: the API is described at /api/v1/openapi.json", r.Method, r.URL.Path))
	})
}

// apiError is the body of every error of the API.
type apiError struct {
	Error string `json:"error"`
}

// writeError answers with status and a one-line JSON error.
func writeError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(apiError{Error: err.Error()})
}

// writeJSON answers 200 with v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// fail answers a request that failed: a requestError with its status,
// anything else as the server's own failure (500), logged.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var re *requestError
	if errors.As(err, &re) {
		writeError(w, re.status, errors.New(s.public(err.Error())))
		return
	}
	s.log.Error("server", "path", r.URL.Path, "err", err)
	writeError(w, http.StatusInternalServerError, errors.New(s.public(err.Error())))
}

// public says a message without the store's place on the server's disk:
// paths in the store are relative to it.
func (s *Server) public(msg string) string {
	return strings.ReplaceAll(msg, s.opts.Store.RunRoot()+"/", "")
}

// requestError is a request's own fault, with the status that says so.
type requestError struct {
	status int
	err    error
}

func (e *requestError) Error() string { return e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }

// badRequest is a 400 error.
func badRequest(format string, args ...any) error {
	return &requestError{http.StatusBadRequest, fmt.Errorf(format, args...)}
}

// notFound is a 404 error.
func notFound(format string, args ...any) error {
	return &requestError{http.StatusNotFound, fmt.Errorf(format, args...)}
}
