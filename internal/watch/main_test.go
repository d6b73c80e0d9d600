package watch

import (
	"bytes"
	"compress/gzip"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heapscope/heapscope/examples"
	"github.com/heapscope/heapscope/internal/cgrouptest"
)

// exampleEnv makes the test binary serve a bundled example, as
// `heapscope serve-example NAME` does: the targets of these tests are real
// services in processes of their own, started as a user starts them.
const exampleEnv = "HEAPSCOPE_WATCH_TEST_EXAMPLE"

func TestMain(m *testing.M) {
	if cgrouptest.IsChild() {
		cgrouptest.RunChild()
	}
	if name := os.Getenv(exampleEnv); name != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := examples.Main(ctx, name, os.Args[1:], os.Getenv, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// startExample starts the named example (leaky, optimized, …) in a child
// process and stops it at the test's end.
func startExample(t *testing.T, name string) *examples.Process {
	t.Helper()
	t.Setenv(exampleEnv, name)
	p, err := examples.Start(context.Background(), name, os.Args[0], "-addr", "127.0.0.1:0")
	os.Unsetenv(exampleEnv)
	if err != nil {
		t.Fatalf("start example %s: %v", name, err)
	}
	t.Cleanup(func() { p.Stop() })
	return p
}

// restartExample stops the example p and starts the named one again on
// its address, as a service restarted in place is.
func restartExample(t *testing.T, p *examples.Process, name, url string) *examples.Process {
	t.Helper()
	addr := strings.TrimPrefix(url, "http://")
	if err := p.Stop(); err != nil {
		t.Fatalf("stop the example: %v", err)
	}
	t.Setenv(exampleEnv, name)
	again, err := examples.Start(context.Background(), name, os.Args[0], "-addr", addr)
	os.Unsetenv(exampleEnv)
	if err != nil {
		t.Fatalf("restart the example on %s: %v", addr, err)
	}
	t.Cleanup(func() { again.Stop() })
	return again
}

// silentTarget accepts connections and never answers: the target a
// watcher must not wait on for longer than its timeout.
func silentTarget(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	t.Cleanup(func() { close(done); ln.Close(); time.Sleep(10 * time.Millisecond) })
	return "http://" + ln.Addr().String()
}

// deadTarget is an address nothing listens on.
func deadTarget(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// bombTarget serves a gzip bomb as its heap profile: a few hundred KiB
// that inflate to size bytes of zeros; its other routes are not found.
// Compressed at the fastest level: under the race detector the default
// level takes minutes over 300 MiB of zeros, the fastest seconds, for a
// bomb a quarter larger.
func bombTarget(t *testing.T, size int) string {
	t.Helper()
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for range size >> 20 {
		zw.Write(zeros)
	}
	zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/pprof/heap" {
			http.NotFound(w, r)
			return
		}
		w.Write(gz.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// endlessTarget answers its heap profile with a body that never ends.
func endlessTarget(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 64<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
