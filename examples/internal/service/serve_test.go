package service

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startServe runs serve in the background and returns the bound address and
// a channel that yields serve's result.
func startServe(t *testing.T, ctx context.Context, h http.Handler, grace time.Duration) (string, <-chan error) {
	t.Helper()
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, "127.0.0.1:0", h, func(a net.Addr) { addrs <- a }, grace) }()
	select {
	case a := <-addrs:
		return a.String(), done
	case err := <-done:
		t.Fatalf("serve returned before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not listen within 10s")
	}
	return "", nil
}

// wait returns the result from done, failing the test after 10s.
func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return within 10s of cancellation")
		return nil
	}
}

func newClient() *http.Client {
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true},
	}
}

func TestServe_ServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, done := startServe(t, ctx, NewMux("svc", teapotService()), time.Second)

	resp, err := newClient().Get("http://" + addr + "/health")
	if err != nil {
		t.Fatalf("GET /health: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
		t.Errorf("GET /health: %d %q, want 200 \"ok\\n\"", resp.StatusCode, body)
	}

	cancel()
	if err := wait(t, done); err != nil {
		t.Errorf("Serve after cancellation: %v, want nil", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("dial %s after shutdown succeeded, want the listener closed", addr)
	}
}

func TestServe_InFlightRequestFinishes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done() // the shutdown cancels the request's context
		_, _ = io.WriteString(w, "finished")
	})
	addr, done := startServe(t, ctx, h, 5*time.Second)

	type result struct {
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := newClient().Get("http://" + addr + "/")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{string(b), err}
	}()
	<-started
	cancel()

	r := <-got
	if r.err != nil || r.body != "finished" {
		t.Errorf("request in flight during shutdown: %q, %v; want \"finished\"", r.body, r.err)
	}
	if err := wait(t, done); err != nil {
		t.Errorf("Serve: %v, want nil", err)
	}
}

func TestServe_GraceExpires(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started, release := make(chan struct{}), make(chan struct{})
	handlerDone := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(handlerDone)
		close(started)
		<-release // ignores its context
	})
	addr, done := startServe(t, ctx, h, 50*time.Millisecond)

	clientDone := make(chan error, 1)
	go func() {
		resp, err := newClient().Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		clientDone <- err
	}()
	<-started
	cancel()
	err := wait(t, done)
	close(release)
	<-handlerDone
	if err == nil || !strings.Contains(err.Error(), "shut down server") {
		t.Errorf("Serve with a request outliving the grace period: %v, want a shutdown error", err)
	}
	if err := <-clientDone; err == nil {
		t.Errorf("the request cut off by the forced close succeeded, want an error")
	}
}

func TestServe_ListenError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	called := false
	err = Serve(context.Background(), ln.Addr().String(), http.NotFoundHandler(), func(net.Addr) { called = true })
	if err == nil || !strings.HasPrefix(err.Error(), "listen on "+ln.Addr().String()) {
		t.Errorf("Serve on a busy port: %v, want a listen error", err)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("Serve on a busy port: %v does not wrap the *net.OpError", err)
	}
	if called {
		t.Errorf("onListen was called although listening failed")
	}
}
