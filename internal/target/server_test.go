package target

import (
	"net/http"
	"net/http/httptest"
	httppprof "net/http/pprof"
	"strings"
	"testing"
)

// pprofMux mounts the real net/http/pprof handlers where a service usually
// does, on a mux of its own.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", httppprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", httppprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", httppprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", httppprof.Trace)
	return mux
}

// newServer starts h on 127.0.0.1 and closes it when the test ends.
func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// newClient builds a Client and fails the test when New refuses opts.
func newClient(t *testing.T, opts Options) *Client {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New(%+v): %v", opts, err)
	}
	return c
}

// checkErr fails the test unless err is a one-line error that contains
// every one of want.
func checkErr(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", want)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error is not one line: %q", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not contain %q", msg, w)
		}
	}
}
