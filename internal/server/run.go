package server

import (
	"context"
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
	// Own, when set, are the caller's routes (watch's /metrics and
	// /healthz), served beside the API. With Own, an address beyond
	// loopback without credentials serves Own alone, and the API is left
	// out (with a warning to Log), rather than refused.
	Own http.Handler
	// Health is Options.Health.
	Health func() map[string]TargetHealth
	// Log receives the warning; slog's default when nil.
	Log *slog.Logger
}

// Run serves cfg until ctx ends; listening, when set, gets the URL once
// it listens. Without Own it refuses an address beyond loopback without
// credentials (CheckListen).
func Run(ctx context.Context, cfg Config, listening func(url string)) error {
	auth, err := Credentials(cfg.TokensFile, cfg.HtpasswdFile)
	if err != nil {
		return err
	}
	listenErr := CheckListen(cfg.Listen, auth)
	if listenErr != nil && cfg.Own == nil {
		return listenErr
	}
	st := cfg.Store
	if st == nil {
		if st, err = cfg.Location.Open(ctx, true); err != nil {
			return err
		}
		defer st.Close()
	}
	loopback := LoopbackAddr(cfg.Listen)
	var h http.Handler
	if cfg.Own != nil {
		// The caller's routes sit behind the same Host check; its
		// profiles (/debug/pprof/, which costs CPU on demand) behind the
		// credentials too. /metrics and /healthz stay open to scrapers
		// and probes.
		own := http.NewServeMux()
		own.Handle("/metrics", cfg.Own)
		own.Handle("/healthz", cfg.Own)
		var prof http.Handler = cfg.Own
		if !auth.Empty() {
			prof = auth.require(prof)
		}
		own.Handle("/debug/pprof/", prof)
		h = webguard.Handler(own, webguard.Options{AnyHost: !loopback})
	}
	if listenErr == nil {
		api, err := New(Options{Store: st, Auth: auth, Loopback: loopback, Health: cfg.Health, Log: cfg.Log})
		if err != nil {
			return err
		}
		if h != nil {
			mux := http.NewServeMux()
			mux.Handle("/metrics", h)
			mux.Handle("/healthz", h)
			mux.Handle("/debug/pprof/", h)
			mux.Handle("/", api)
			h = mux
		} else {
			h = api
		}
	} else {
		log := cfg.Log
		if log == nil {
			log = slog.Default()
		}
		log.Warn("the history API is not served: " + listenErr.Error())
	}
	return webguard.Serve(ctx, cfg.Listen, h, listening)
}
