package examples

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv, set, makes the test binary serve an example (its arguments:
// NAME and Main's flags) instead of running tests, as heapscope's
// serve-example does.
const childEnv = "HEAPSCOPE_EXAMPLES_TEST_CHILD"

// serveChild is the test binary run as a child by Start.
func serveChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Main(ctx, os.Args[1], os.Args[2:], os.Getenv, os.Stderr)
}

func TestStart(t *testing.T) {
	t.Setenv(childEnv, "1") // inherited by the children
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("serves until stopped", func(t *testing.T) {
		p, err := Start(t.Context(), "leaky", self, "leaky", "--addr", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p.URL, "http://127.0.0.1:") || p.PID() <= 0 {
			t.Errorf("URL %q, pid %d", p.URL, p.PID())
		}
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Get(p.URL + "/health")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /health: status %d", resp.StatusCode)
		}
		if err := p.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if p.cmd.ProcessState == nil || !p.cmd.ProcessState.Success() {
			t.Errorf("after Stop the example's state is %v, want a graceful exit 0", p.cmd.ProcessState)
		}
	})

	t.Run("says why it exited", func(t *testing.T) {
		_, err := Start(t.Context(), "nope", self, "nope")
		if err == nil || !strings.Contains(err.Error(), "start example nope: it exited (exit status 2)") || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("error %v, want the exit status and the example's last line", err)
		}
	})

	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		// A command that never listens.
		if _, err := Start(ctx, "leaky", "sleep", "60"); err != context.Canceled {
			t.Errorf("error %v, want %v", err, context.Canceled)
		}
	})
}
