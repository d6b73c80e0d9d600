package trigger

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/heapscope/heapscope/examples"
)

// helperEnv selects what the test binary does when a test starts it as a
// child process rather than to run tests.
const helperEnv = "TRIGGER_TEST_HELPER"

// held keeps the helper's allocations alive.
var held [][]byte

// runHelper is the child process of the cgroup tests. As "alloc" it says
// "ready", then for each line N of its stdin allocates N MiB more, writes
// to every page so that it is resident (and charged to its cgroup), and
// says "ok"; it exits when stdin closes. As "leaky" it serves the leaky
// cache example on a free port of 127.0.0.1 until SIGTERM.
func runHelper() {
	switch mode := os.Getenv(helperEnv); mode {
	case "alloc":
	case "leaky":
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		code := examples.Main(ctx, mode, []string{"-addr", "127.0.0.1:0"}, os.Getenv, os.Stderr)
		stop()
		os.Exit(code)
	default:
		fmt.Fprintf(os.Stderr, "unknown %s %q\n", helperEnv, mode)
		os.Exit(2)
	}
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		mib, err := strconv.Atoi(sc.Text())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		b := make([]byte, mib<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		held = append(held, b)
		fmt.Println("ok")
	}
	os.Exit(0)
}
