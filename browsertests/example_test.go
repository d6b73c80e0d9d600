package browsertests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heapscope/heapscope/examples"
)

// exampleEnv names the example a re-executed test binary serves instead of
// running the tests; exampleAddrEnv, when set, is the address it listens
// on (a free port on 127.0.0.1 otherwise).
const (
	exampleEnv     = "HEAPSCOPE_BROWSERTESTS_EXAMPLE"
	exampleAddrEnv = "HEAPSCOPE_BROWSERTESTS_ADDR"
)

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
	addr := os.Getenv(exampleAddrEnv)
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	return examples.Main(ctx, name, []string{"--addr", addr}, os.Getenv, os.Stderr)
}

// startExample starts the named example service as a child process, the
// test binary re-executed, with the finer heap sampling heapscope demo
// gives it, and returns its URL and PID. The service stops when the test
// ends.
func startExample(t *testing.T, name string) (string, int) {
	t.Helper()
	p := runExample(t, name, "")
	return p.URL, p.PID
}

// exampleProcess is an example service runExample started.
type exampleProcess struct {
	Name, URL string
	PID       int
	stdin     io.Closer
	cmd       *exec.Cmd
	exited    chan error
	stopped   bool
}

// runExample starts the named example as startExample does, listening on
// addr ("" for a free port on 127.0.0.1). It stops when the test ends,
// unless Stop stopped it before.
func runExample(t *testing.T, name, addr string) *exampleProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), exampleEnv+"="+name, exampleAddrEnv+"="+addr, "GODEBUG=memprofilerate=4096")
	return startProcess(t, name, cmd)
}

// buildExamples builds the commands of the named examples (leaky,
// optimized, …) into a temporary directory, as their users build them,
// and returns each binary's path by name. A service built so has the
// main module a service has: its own code is the example's, where a
// re-executed test binary's main module is this one's.
func buildExamples(t *testing.T, names ...string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	bins := map[string]string{}
	for _, name := range names {
		program, _ := examples.Program(name)
		if program == "" {
			t.Fatalf("no example %q", name)
		}
		args = append(args, "./examples/"+program+"/cmd/"+program)
		bins[name] = filepath.Join(dir, program)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = ".." // the main module
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bins
}

// runBuiltExample starts an example's command that buildExamples built,
// listening on addr ("" for a free port on 127.0.0.1), with the finer
// heap sampling heapscope demo gives it. It stops when the test ends,
// unless Stop stopped it before.
func runBuiltExample(t *testing.T, bin, name, addr string) *exampleProcess {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	cmd := exec.Command(bin, "--addr", addr)
	cmd.Env = append(os.Environ(), "GODEBUG=memprofilerate=4096")
	return startProcess(t, name, cmd)
}

// startProcess starts an example's process and waits for it to say
// where it listens.
func startProcess(t *testing.T, name string, cmd *exec.Cmd) *exampleProcess {
	t.Helper()
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
	p := &exampleProcess{Name: name, PID: cmd.Process.Pid, stdin: stdin, cmd: cmd, exited: make(chan error, 1)}
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
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
	})
	select {
	case p.URL = <-urls:
		return p
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("example %s exited before listening: %v", name, err)
	case <-time.After(15 * time.Second):
		t.Fatalf("example %s not listening after 15 s", name)
	}
	return nil
}

// Stop asks the example to shut down gracefully, as a service manager
// does (SIGTERM; a re-executed test binary also stops when its stdin
// closes), and waits for it to exit: within 10 s, else it is killed and
// Stop says so. Stopping it again returns nil at once.
func (p *exampleProcess) Stop() error {
	if p.stopped {
		return nil
	}
	p.stopped = true
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	p.stdin.Close()
	select {
	case err := <-p.exited:
		if err != nil {
			return fmt.Errorf("example %s (pid %d) exited: %w", p.Name, p.PID, err)
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("example %s (pid %d) did not stop within 10 s of SIGTERM", p.Name, p.PID)
	}
}
