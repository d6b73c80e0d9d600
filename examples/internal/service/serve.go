package service

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Server limits. There is no write timeout: net/http/pprof refuses a CPU
// profile or trace longer than the server's WriteTimeout, and a profiling run
// may ask for minutes. The services' own handlers answer at once.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10

	// shutdownTimeout bounds the wait for requests in flight once the
	// context is cancelled; connections still open are then closed.
	shutdownTimeout = 10 * time.Second
)

// Serve listens on addr and serves h until ctx is cancelled, then shuts down
// gracefully: it stops accepting, lets the requests in flight finish (their
// contexts are cancelled, so a CPU profile or trace in progress ends early and
// is still written) and closes what is left after ten seconds. addr may name
// port 0; onListen, when not nil, is called with the address actually bound
// before the first request is accepted. Serve returns nil after a graceful
// shutdown.
func Serve(ctx context.Context, addr string, h http.Handler, onListen func(net.Addr)) error {
	return serve(ctx, addr, h, onListen, shutdownTimeout)
}

func serve(ctx context.Context, addr string, h http.Handler, onListen func(net.Addr), grace time.Duration) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	if onListen != nil {
		onListen(ln.Addr())
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		return fmt.Errorf("serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}

	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err = srv.Shutdown(shutdownCtx); err != nil {
		err = errors.Join(fmt.Errorf("shut down server on %s: %w", ln.Addr(), err), srv.Close())
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("serve on %s: %w", ln.Addr(), serr))
	}
	return err
}
