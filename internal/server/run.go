package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/location"
	"github.com/heapscope/heapscope/internal/webguard"
)

// Config is what a command line gives a server: heapscope server's, or
// watch --listen's, which serves its own routes beside it.
type Config struct {
	// Location is the store's, opened for reading when Store is nil.
	Location location.Location
	// Store is the store when the caller has it open (watch).
	Store store.Store
	// Listen is the address, HOST:PORT.
	Listen string
	// TokensFile and HtpasswdFile name the credential files, if any.
	TokensFile, HtpasswdFile string
	// Own, when set, are the caller's routes (watch's /metrics, /healthz
	// and /debug/pprof/), served beside the API under the same
	// credentials, but for /healthz (see Handler).
	Own http.Handler
	// DebugPprof serves Own's /debug/pprof/: off unless asked for, as
	// profiles of the server itself cost it CPU and tell of its inside.
	DebugPprof bool
	// Health is Options.Health.
	Health func() map[string]TargetHealth
	// Log receives one line per failed request; slog's default when nil.
	Log *slog.Logger
}

// Run serves cfg until ctx ends; listening, when set, gets the URL once
// it listens. It refuses an address beyond loopback without credentials
// (CheckListen).
func Run(ctx context.Context, cfg Config, listening func(url string)) error {
	auth, err := Credentials(cfg.TokensFile, cfg.HtpasswdFile)
	if err != nil {
		return err
	}
	if err := CheckListen(cfg.Listen, auth); err != nil {
		return err
	}
	st := cfg.Store
	if st == nil {
		if st, err = cfg.Location.Open(ctx, true); err != nil {
			return err
		}
		defer st.Close()
	}
	h, err := handler(cfg, auth, st)
	if err != nil {
		return err
	}
	return webguard.Serve(ctx, cfg.Listen, h, listening)
}

// Handler returns every route cfg serves over st: the API and pages,
// and Own's routes. With credentials (required beyond loopback), each
// route requires one, but /healthz: a request without one gets a bare
// liveness answer, {"status":"ok"} (200) or {"status":"not ok"} (503),
// and one with a credential gets Own's whole answer. Without
// credentials, on loopback, everything is open to the processes of the
// machine, behind webguard's checks.
func Handler(cfg Config, st store.Store) (http.Handler, error) {
	auth, err := Credentials(cfg.TokensFile, cfg.HtpasswdFile)
	if err != nil {
		return nil, err
	}
	if err := CheckListen(cfg.Listen, auth); err != nil {
		return nil, err
	}
	return handler(cfg, auth, st)
}

// handler is Handler with cfg's credentials loaded and its address
// checked.
func handler(cfg Config, auth *Auth, st store.Store) (http.Handler, error) {
	loopback := LoopbackAddr(cfg.Listen)
	api, err := New(Options{Store: st, Auth: auth, Loopback: loopback, Health: cfg.Health, Log: cfg.Log})
	if err != nil {
		return nil, err
	}
	if cfg.Own == nil {
		return api, nil
	}
	// The caller's routes sit behind the API's checks: webguard's, then
	// the credentials. The API and pages have both already.
	var guarded, health http.Handler = cfg.Own, cfg.Own
	if !auth.Empty() {
		guarded = auth.require(cfg.Own)
		bare := bareHealth(cfg.Own)
		health = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if auth.allows(r) {
				cfg.Own.ServeHTTP(w, r)
				return
			}
			bare.ServeHTTP(w, r)
		})
	}
	own := http.NewServeMux()
	own.Handle("/healthz", health)
	own.Handle("/metrics", guarded)
	if cfg.DebugPprof {
		own.Handle("/debug/pprof/", guarded)
	}
	ownGuarded := webguard.Handler(own, webguard.Options{AnyHost: !loopback})
	mux := http.NewServeMux()
	mux.Handle("/healthz", ownGuarded)
	mux.Handle("/metrics", ownGuarded)
	if cfg.DebugPprof {
		mux.Handle("/debug/pprof/", ownGuarded)
	}
	mux.Handle("/", api)
	return mux, nil
}

// bareHealth answers as h does, but says only whether all is well: h's
// answer is ok when its status is below 400 and its JSON "status", if
// any, is "ok". Nothing of h's body (target URLs, errors) is passed on.
func bareHealth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &healthRecorder{header: http.Header{}, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		var body struct {
			Status *string `json:"status"`
		}
		ok := rec.status < 400
		if ok && json.Unmarshal(rec.body.Bytes(), &body) == nil && body.Status != nil {
			ok = *body.Status == "ok"
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"status":"not ok"}` + "\n"))
			return
		}
		w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
}

// healthRecorder keeps the answer of a health handler.
type healthRecorder struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (r *healthRecorder) Header() http.Header { return r.header }

func (r *healthRecorder) WriteHeader(status int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = status, true
	}
}

func (r *healthRecorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	return r.body.Write(b)
}
