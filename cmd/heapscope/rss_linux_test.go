package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/rss"
	"github.com/heapscope/heapscope/internal/sysmem"
)

// rssChild is a running testdata/rsschild process.
type rssChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

func startRSSChild(t *testing.T, args ...string) *rssChild {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "rsschild")
	build := exec.Command("go", "build", "-o", bin, "./testdata/rsschild")
	// Pure Go, as before it served HTTP: net would link libc, whose
	// malloc arenas change the address space the tests reason about.
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build rsschild: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
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
	c := &rssChild{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	c.waitReady(t)
	return c
}

func (c *rssChild) waitReady(t *testing.T) {
	t.Helper()
	if !c.out.Scan() || c.out.Text() != "ready" {
		t.Fatalf("rsschild did not say ready: %q %v", c.out.Text(), c.out.Err())
	}
}

func (c *rssChild) mapAndTouch(t *testing.T, sizeMiB, touchMiB int) {
	t.Helper()
	if _, err := fmt.Fprintf(c.stdin, "map %d %d\n", sizeMiB, touchMiB); err != nil {
		t.Fatal(err)
	}
	c.waitReady(t)
}

// rssJSON runs heapscope rss in-process and decodes its JSON report.
func rssJSON(t *testing.T, args ...string) rss.Report {
	t.Helper()
	inv := heapscope(t, append([]string{"rss", "--format", "json"}, args...)...)
	if inv.code != 0 {
		t.Fatalf("rss %v: exit %d: %s", args, inv.code, inv.stderr)
	}
	var r rss.Report
	if err := json.Unmarshal([]byte(inv.stdout), &r); err != nil {
		t.Fatalf("decode rss output: %v\n%s", err, inv.stdout)
	}
	return r
}

func kindOf(t *testing.T, r rss.Report, kind string) rss.Usage {
	t.Helper()
	for _, u := range r.Kinds {
		if u.Kind == kind {
			return u
		}
	}
	t.Fatalf("no kind %q in %+v", kind, r.Kinds)
	return rss.Usage{}
}

// TestRSS_childTouchesMemory maps 128 MiB in a child process and touches
// 48 MiB of it: RSS rises by about 48 MiB, the untouched 80 MiB does not
// count, and the mapping is other anonymous memory, not Go heap.
func TestRSS_childTouchesMemory(t *testing.T) {
	const sizeMiB, touchMiB = 128, 48
	child := startRSSChild(t)
	pid := strconv.Itoa(child.cmd.Process.Pid)
	before := rssJSON(t, pid)
	child.mapAndTouch(t, sizeMiB, touchMiB)
	after := rssJSON(t, pid)

	const mib = 1 << 20
	rise := int64(after.RSSBytes) - int64(before.RSSBytes)
	if rise < (touchMiB-4)*mib || rise > (touchMiB+8)*mib {
		t.Errorf("RSS rose by %.1f MiB, want about %d MiB", float64(rise)/mib, touchMiB)
	}
	anonBefore, anonAfter := kindOf(t, before, "anonymous"), kindOf(t, after, "anonymous")
	if grew := anonAfter.SizeBytes - anonBefore.SizeBytes; grew < sizeMiB*mib {
		t.Errorf("anonymous mappings grew by %d bytes, want at least %d", grew, sizeMiB*mib)
	}
	anonRise := int64(anonAfter.RSSBytes) - int64(anonBefore.RSSBytes)
	if anonRise < (touchMiB-4)*mib || anonRise > (touchMiB+4)*mib {
		t.Errorf("anonymous Rss rose by %.1f MiB, want about %d MiB (the untouched part must not count)", float64(anonRise)/mib, touchMiB)
	}
	if after.GoHeap.Mappings == 0 {
		t.Error("no Go heap found in a Go process")
	}
	if h := after.GoHeap.SizeBytes; h >= sizeMiB*mib {
		t.Errorf("Go heap of %d bytes holds the child's mmap", h)
	}
}

// TestRSS_target reads this test process, whose pprof an httptest server
// serves: the runtime's figures come beside the kernel's and the heap
// arenas square with HeapSys.
func TestRSS_target(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	r := rssJSON(t, strconv.Itoa(os.Getpid()), "--target", srv.URL)
	if r.Runtime == nil || r.Runtime.HeapSysBytes == 0 {
		t.Fatalf("no runtime figures: %+v", r.Runtime)
	}
	if !r.GoHeap.Consistent {
		t.Errorf("heap mappings not consistent with HeapSys %d: %s", r.Runtime.HeapSysBytes, r.GoHeap.Note)
	}
	if len(r.Gap) == 0 || !strings.HasPrefix(r.Gap[0].ID, "heap-") {
		t.Errorf("first explanation %+v, want one about the heap", r.Gap)
	}
	if r.Cgroup == nil {
		t.Errorf("no cgroup; warnings %v", r.Warnings)
	}
}

// TestRSS_discover reads child processes without --target: the runtime's
// figures come from the pprof found on the child's listening port, and
// are unknown, with the way to give them, when no port serves pprof.
func TestRSS_discover(t *testing.T) {
	t.Run("child serves pprof", func(t *testing.T) {
		child := startRSSChild(t, "-serve", "pprof")
		pid := strconv.Itoa(child.cmd.Process.Pid)
		r := rssJSON(t, pid)
		if r.Runtime == nil || r.Runtime.HeapSysBytes == 0 || r.Runtime.SysBytes == 0 {
			t.Fatalf("no runtime figures: %+v; unknown: %s", r.Runtime, r.RuntimeUnknown)
		}
		if !r.Runtime.Discovered || !strings.HasPrefix(r.Runtime.SourceURL, "http://127.0.0.1:") || !strings.HasSuffix(r.Runtime.SourceURL, "/debug/pprof/") {
			t.Errorf("runtime from %q (discovered %v), want the child's port", r.Runtime.SourceURL, r.Runtime.Discovered)
		}
		if !r.GoHeap.Consistent {
			t.Errorf("heap mappings not consistent with HeapSys %d: %s", r.Runtime.HeapSysBytes, r.GoHeap.Note)
		}
		inv := heapscope(t, "rss", pid)
		if inv.code != 0 || !strings.Contains(inv.stdout, "/debug/pprof/, found on the process's listening port\n") {
			t.Errorf("rss %s: exit %d, text does not say where the runtime's figures came from:\n%s%s", pid, inv.code, inv.stdout, inv.stderr)
		}

		r = rssJSON(t, pid, "--no-discover")
		if r.Runtime != nil || !strings.Contains(r.RuntimeUnknown, "--no-discover") {
			t.Errorf("--no-discover: runtime %+v, unknown %q", r.Runtime, r.RuntimeUnknown)
		}
	})
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"child listens on no port", nil, "the process listens on no TCP port"},
		{"child serves no pprof", []string{"-serve", "plain"}, "serves http://127.0.0.1:PORT/debug/pprof/heap?debug=1 (one answered 404"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			child := startRSSChild(t, tt.args...)
			inv := heapscope(t, "rss", strconv.Itoa(child.cmd.Process.Pid))
			if inv.code != 0 {
				t.Fatalf("exit %d: %s", inv.code, inv.stderr)
			}
			line := "runtime (MemStats): unknown: "
			i := strings.Index(inv.stdout, line)
			if i < 0 {
				t.Fatalf("no %q line:\n%s", line, inv.stdout)
			}
			line, _, _ = strings.Cut(inv.stdout[i:], "\n")
			if !strings.Contains(line, tt.want) || !strings.HasSuffix(line, "give --target URL, the process's pprof") {
				t.Errorf("%s, want %q and how to give the figures", line, tt.want)
			}
		})
	}
}

// fakeProc fails the way sysmem.Proc does on a process it may not read.
type fakeProc struct{ sysmem.Proc }

func (fakeProc) ScanSmaps(pid int, _ func(*sysmem.Mapping)) error {
	return fmt.Errorf("read /proc/%d/smaps: %w", pid, fs.ErrPermission)
}

func TestRSS_errors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"non-numeric pid", []string{"rss", "nginx"}, `rss: PID "nginx" is not a process id`},
		{"negative pid", []string{"rss", "--", "-3"}, `rss: PID "-3" is not a process id`},
		{"process gone", []string{"rss", "999999999"}, "process 999999999 not found"},
		{"no pid", []string{"rss"}, "rss takes PID"},
		{"bad format", []string{"rss", "1", "--format", "markdown"}, `--format "markdown": give text or json`},
		{"unreachable target", []string{"rss", strconv.Itoa(os.Getpid()), "--target", "http://127.0.0.1:1"}, "fetch MemStats"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := heapscope(t, tt.args...)
			if inv.code != exitUsage {
				t.Errorf("exit %d, want %d", inv.code, exitUsage)
			}
			if !strings.Contains(inv.stderr, tt.want) || strings.Count(strings.TrimSpace(inv.stderr), "\n") != 0 {
				t.Errorf("stderr %q, want one line with %q", inv.stderr, tt.want)
			}
			if inv.stdout != "" {
				t.Errorf("stdout %q, want nothing", inv.stdout)
			}
		})
	}

	t.Run("permission", func(t *testing.T) {
		// Unprivileged, init is a real process this user may not read;
		// as root, a fake /proc refuses the same way.
		if os.Geteuid() != 0 {
			inv := heapscope(t, "rss", "1")
			if inv.code != exitUsage || !strings.Contains(inv.stderr, "permission denied") {
				t.Errorf("rss 1: exit %d, stderr %q", inv.code, inv.stderr)
			}
		}
		var stdout strings.Builder
		err := runRSS(t.Context(), &env{stdout: &stdout, stderr: io.Discard}, "42", &rssOptions{format: "text", proc: fakeProc{}})
		if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "run as the process's user, or as root") {
			t.Errorf("error %v, want a permission error that says what to do", err)
		}
		if stdout.Len() != 0 {
			t.Errorf("stdout %q, want nothing", stdout.String())
		}
	})
}
