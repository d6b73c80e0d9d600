package trigger

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/heapscope/heapscope/examples"
)

// helperEnv selects what the test binary does when a test starts it as a
// child process rather than to run tests. The allocating child of the
// cgroup tests is cgrouptest's.
const helperEnv = "TRIGGER_TEST_HELPER"

// runHelper is a child process of the tests. As "leaky" it serves the
// leaky cache example on a free port of 127.0.0.1 until SIGTERM.
func runHelper() {
	mode := os.Getenv(helperEnv)
	if mode != "leaky" {
		fmt.Fprintf(os.Stderr, "unknown %s %q\n", helperEnv, mode)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	code := examples.Main(ctx, mode, []string{"-addr", "127.0.0.1:0"}, os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}
