package browsertests

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heapscope/heapscope/examples"
)

// exampleEnv names the example a re-executed test binary serves instead of
// running the tests.
const exampleEnv = "HEAPSCOPE_BROWSERTESTS_EXAMPLE"

// TestMain serves an example when the binary is re-executed for one, and
// otherwise runs the tests. Either way the heap is sampled finely, as demo
// does for the example it starts: at the default rate (one sample per
// 512 KiB) a short window of small allocations may leave no sample at
// their sites.
func TestMain(m *testing.M) {
	runtime.MemProfileRate = 4096
	if name := os.Getenv(exampleEnv); name != "" {
		os.Exit(serveExample(name))
	}
	os.Exit(m.Run())
}

// serveExample serves the named example until SIGTERM or until its stdin
// closes, which it does when the test that started it ends or dies.
func serveExample(name string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	return examples.Main(ctx, name, []string{"--addr", "127.0.0.1:0"}, os.Getenv, os.Stderr)
}

// startExample starts the named example service as a child process, the
// test binary re-executed, with the finer heap sampling heapscope demo
// gives it, and returns its URL and PID. The service stops when the test
// ends.
func startExample(t *testing.T, name string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), exampleEnv+"="+name, "GODEBUG=memprofilerate=4096")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start example %s: %v", name, err)
	}
	exited := make(chan error, 1)
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, u, ok := strings.Cut(sc.Text(), "listening on "); ok {
				select {
				case urls <- strings.TrimSpace(u):
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("example %s exited: %v", name, err)
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("example %s did not stop within 10 s of its stdin closing", name)
		}
	})
	select {
	case u := <-urls:
		return u, cmd.Process.Pid
	case err := <-exited:
		exited <- err
		t.Fatalf("example %s exited before listening: %v", name, err)
	case <-time.After(15 * time.Second):
		t.Fatalf("example %s not listening after 15 s", name)
	}
	return "", 0
}
