package sysmem

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// helperEnv selects what the test binary does when it is started as a
// child process by a test rather than to run tests.
const helperEnv = "SYSMEM_TEST_HELPER"

func TestMain(m *testing.M) {
	switch mode := os.Getenv(helperEnv); {
	case mode == "":
		os.Exit(m.Run())
	case mode == "wait":
		// A process for tests to look at: it lives until its stdin
		// closes.
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case strings.HasPrefix(mode, "listen:"):
		// Find the process listening on a port and say how that went.
		port, _ := strconv.Atoi(strings.TrimPrefix(mode, "listen:"))
		pid, err := Proc{}.ListeningPID(port)
		switch {
		case err == nil:
			fmt.Println("pid", pid)
		case errors.Is(err, fs.ErrPermission) && errors.Is(err, ErrListenerHidden):
			fmt.Println("permission:", err)
		default:
			fmt.Println("other:", err)
		}
		os.Exit(0)
	case strings.HasPrefix(mode, "serve:"):
		// Listen on a port of 127.0.0.1 until stdin closes.
		ln, err := net.Listen("tcp4", "127.0.0.1:"+strings.TrimPrefix(mode, "serve:"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		ln.Close()
		os.Exit(0)
	case strings.HasPrefix(mode, "environ:"):
		// Read another process's environ and say how that went.
		pid, _ := strconv.Atoi(strings.TrimPrefix(mode, "environ:"))
		_, err := Proc{}.GoEnv(pid)
		switch {
		case err == nil:
			fmt.Println("readable")
		case errors.Is(err, fs.ErrPermission):
			fmt.Println("permission:", err)
		default:
			fmt.Println("other:", err)
		}
		os.Exit(0)
	default:
		fmt.Fprintf(os.Stderr, "unknown %s %q\n", helperEnv, mode)
		os.Exit(2)
	}
}

// child is a running copy of the test binary in "wait" mode.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startChild starts a child process with env added to its environment and
// waits until it runs; it is stopped when the test ends.
func startChild(t *testing.T, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	env = append(env, noExitSleep())
	// The first entry of a name wins: leave out the inherited ones that
	// env sets.
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, name+"=") }) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, helperEnv+"=wait"), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin}
	t.Cleanup(c.stop)
	buf := make([]byte, len("ready\n"))
	if _, err := io.ReadFull(stdout, buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("child did not start: %q, %v", buf, err)
	}
	return c
}

// pid returns the child's process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// stop ends the child and waits for it, so its pid no longer exists.
func (c *child) stop() {
	if c.stdin != nil {
		c.stdin.Close()
		c.stdin = nil
		c.cmd.Wait()
	}
}

// runAsNobody runs a copy of the test binary, as user nobody, in helper
// mode, and returns what it printed. It reports false when this process
// may not start one (not root, or no right to change user in a user
// namespace).
func runAsNobody(t *testing.T, mode string) (string, bool) {
	t.Helper()
	if os.Geteuid() != 0 {
		return "", false
	}
	// The copy goes where nobody can run it.
	dir, err := os.MkdirTemp("", "sysmem-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "sysmem.test")
	copyFile(t, os.Args[0], exe)
	cmd := exec.Command(exe)
	cmd.Env = []string{helperEnv + "=" + mode, noExitSleep()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		t.Fatalf("helper run as nobody failed: %v; %s%s", err, out, exit.Stderr)
	case err != nil:
		t.Logf("run the helper as nobody: %v", err)
		return "", false
	}
	return strings.TrimSpace(string(out)), true
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// noExitSleep returns the GORACE setting that stops a race-enabled child
// from sleeping a second when it exits.
func noExitSleep() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}
