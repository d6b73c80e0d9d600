//go:build linux

package cgrouptest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// V1Memory is where the cgroup v1 memory controller is mounted, when the
// host has one.
const V1Memory = "/sys/fs/cgroup/memory"

// NeedRoot skips the test unless it runs as root.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating a cgroup needs root (CI runs this test as root)")
	}
}

// name returns a name for the test's own cgroup, unique on the machine:
// the process's PID and the test's name.
func name(t testing.TB) string {
	return fmt.Sprintf("heapscope-test-%d-%s", os.Getpid(), strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()))
}

// Make creates the test's cgroup under the hierarchy mounted at mount (a
// v1 controller's, or the unified one of cgroup v2) and returns its
// directory. At the end of the test the processes still in it (the test's
// children) are killed by PID and it is removed.
func Make(t testing.TB, mount string) string {
	t.Helper()
	dir := filepath.Join(mount, name(t))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("create cgroup: %v", err)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			pids := PIDs(dir)
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			err := os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("remove cgroup %s (processes %v): %v", dir, pids, err)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	return dir
}

// MakeV1 creates the test's cgroup of the v1 memory controller, limited to
// limit bytes (swap included, when the kernel accounts swap), and returns
// its directory; it is removed at the end of the test. The test skips when
// not run as root or when the host has no v1 memory controller.
func MakeV1(t testing.TB, limit uint64) string {
	t.Helper()
	NeedRoot(t)
	if _, err := os.Stat(filepath.Join(V1Memory, "cgroup.event_control")); err != nil {
		t.Skipf("no cgroup v1 memory controller at %s: %v", V1Memory, err)
	}
	dir := Make(t, V1Memory)
	Write(t, dir, "memory.limit_in_bytes", strconv.FormatUint(limit, 10))
	if _, err := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes")); err == nil {
		Write(t, dir, "memory.memsw.limit_in_bytes", strconv.FormatUint(limit, 10))
	}
	return dir
}

// UnifiedMount returns where the cgroup v2 hierarchy is mounted: beside
// the v1 controllers on a hybrid host, or at /sys/fs/cgroup. The test
// skips when there is none.
func UnifiedMount(t testing.TB) string {
	t.Helper()
	for _, dir := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(dir, "cgroup.controllers")); err == nil {
			return dir
		}
	}
	t.Skip("no cgroup v2 hierarchy mounted")
	return ""
}

// Write writes value to a file of cgroup dir.
func Write(t testing.TB, dir, file, value string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
		t.Fatalf("write %s to %s: %v", value, filepath.Join(dir, file), err)
	}
}

// ReadUint reads the number a file of cgroup dir holds.
func ReadUint(t testing.TB, dir, file string) uint64 {
	t.Helper()
	name := filepath.Join(dir, file)
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(data)), 10, 64)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return v
}

// PIDs lists the processes of cgroup dir; none when it cannot be read.
func PIDs(dir string) []int {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Move moves process pid into cgroup dir. Pages it touched before stay
// charged where they were.
func Move(t testing.TB, dir string, pid int) {
	t.Helper()
	Write(t, dir, "cgroup.procs", strconv.Itoa(pid))
}

// AllocChild is a running allocating child (see RunChild).
type AllocChild struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	waited chan error
}

// StartAlloc starts the test binary as the allocating child, its
// environment the test's with env added (e.g. "GOMEMLIMIT=200MiB"), and
// moves it into cgroup dir (v1 or v2) once it is ready, before it
// allocates. It is killed at the end of the test. The test's TestMain must
// call RunChild when IsChild.
func StartAlloc(t testing.TB, dir string, env ...string) *AllocChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"=alloc"), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &AllocChild{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout), waited: make(chan error, 1)}
	t.Cleanup(func() {
		cmd.Process.Kill()
		c.Wait()
	})
	if line, err := c.stdout.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("child did not start: %q, %v", line, err)
	}
	Move(t, dir, cmd.Process.Pid)
	return c
}

// Alloc makes the child allocate and touch mib MiB more, and returns once
// it has. It returns an error when the child did not say it had (killed by
// the OOM killer, for one).
func (c *AllocChild) Alloc(mib int) error {
	if _, err := fmt.Fprintln(c.stdin, mib); err != nil {
		return fmt.Errorf("ask the child for %d MiB: %w", mib, err)
	}
	line, err := c.stdout.ReadString('\n')
	if err != nil {
		return fmt.Errorf("allocate %d MiB in the child: %w", mib, err)
	}
	if line != "ok\n" {
		return fmt.Errorf("allocate %d MiB in the child: it said %q", mib, line)
	}
	return nil
}

// Wait closes the child's stdin, waits for it to exit and returns how, as
// exec.Cmd.Wait does; called again, it returns the same.
func (c *AllocChild) Wait() error {
	select {
	case err := <-c.waited:
		c.waited <- err
		return err
	default:
	}
	c.stdin.Close()
	err := c.cmd.Wait()
	c.waited <- err
	return err
}

// PID returns the child's process ID.
func (c *AllocChild) PID() int { return c.cmd.Process.Pid }
