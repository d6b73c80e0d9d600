package gcrun

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/gcstats"
)

// childEnv, set to an exit code, makes the test binary a program that
// says so on stderr, collects garbage three times and exits with that
// code.
const childEnv = "HEAPSCOPE_GCRUN_TEST_CHILD"

func TestMain(m *testing.M) {
	if code := os.Getenv(childEnv); code != "" {
		// Said before the GCs: the runtime prints its trace lines
		// asynchronously, in pieces that another write can split.
		fmt.Fprintln(os.Stderr, "child: collecting")
		var keep [][]byte
		for range 3 {
			keep = append(keep, make([]byte, 1<<20))
			runtime.GC()
		}
		runtime.KeepAlive(keep)
		// The last trace line may still be printing: an exit now could
		// cut it.
		time.Sleep(100 * time.Millisecond)
		n, _ := strconv.Atoi(code)
		os.Exit(n)
	}
	os.Exit(m.Run())
}

func TestRun(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []int{0, 3} {
		t.Run(fmt.Sprintf("exit %d", code), func(t *testing.T) {
			t.Setenv(childEnv, strconv.Itoa(code))
			t.Setenv("GODEBUG", "madvdontneed=1")
			var stdout, stderr bytes.Buffer
			res, err := Run(t.Context(), []string{self}, Options{Stdout: &stdout, Stderr: &stderr})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != code {
				t.Errorf("exit code %d, want %d", res.ExitCode, code)
			}
			if len(res.Trace.Cycles) < 3 {
				t.Errorf("%d GC cycles, want the 3 forced ones at least", len(res.Trace.Cycles))
			}
			// The trace is parsed, not forwarded; the rest is.
			if got := stderr.String(); got != "child: collecting\n" {
				t.Errorf("forwarded stderr %q, want the child's own line only", got)
			}
		})
	}

	if _, err := Run(t.Context(), []string{"/nonexistent/command"}, Options{}); err == nil || !strings.HasPrefix(err.Error(), "run /nonexistent/command: ") {
		t.Errorf("a missing command: error %v", err)
	}
}

func TestForward(t *testing.T) {
	long := strings.Repeat("x", 100<<10) + "\n"
	gc := "gc 1 @0.011s 2%: 0.010+0.25+0.003 ms clock, 0.040+0.10/0.20/0.10+0.012 ms cpu, 4->4->0 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 4 P\n"
	in := "own line\n" + gc + long + "last line without newline"
	var out bytes.Buffer
	var p gcstats.TraceParser
	if err := Forward(strings.NewReader(in), &out, &p); err != nil {
		t.Fatal(err)
	}
	if want := "own line\n" + long + "last line without newline"; out.String() != want {
		t.Errorf("forwarded %d bytes, want %d: everything but the GC line", out.Len(), len(want))
	}
	if n := len(p.Trace().Cycles); n != 1 {
		t.Errorf("%d cycles parsed, want 1", n)
	}
}

func TestWithGODEBUG(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"none", []string{"HOME=/h"}, "GODEBUG=gctrace=1"},
		{"appended", []string{"GODEBUG=madvdontneed=1", "HOME=/h"}, "GODEBUG=madvdontneed=1,gctrace=1"},
		{"already set", []string{"GODEBUG=gctrace=2"}, "GODEBUG=gctrace=2"},
		{"empty", []string{"GODEBUG="}, "GODEBUG=gctrace=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WithGODEBUG(tt.env, "gctrace=1")
			godebug := godebugOf(got)
			if !slices.Equal(godebug, []string{tt.want}) {
				t.Errorf("GODEBUG entries %q, want [%q]", godebug, tt.want)
			}
			if len(got) != len(tt.env)+1-len(godebugOf(tt.env)) {
				t.Errorf("env %q lost or duplicated entries", got)
			}
		})
	}
}

func godebugOf(env []string) []string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "GODEBUG=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestRun_goTest traces go test on a module of its own, built from an
// empty build cache: the go command, the compiler and the linker collect
// garbage too, and only the test binary's cycles are counted — none for a
// test that allocates nothing, the forced ones for a test that forces
// them, whether go test shows the test's output or not.
func TestRun_goTest(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	files := map[string]string{
		"go.mod": "module gctracetest\n\ngo 1.26\n",
		"a_test.go": `package gctracetest

import (
	"runtime"
	"testing"
	"time"
)

func TestNothing(t *testing.T) {}

func TestCollect(t *testing.T) {
	for range 4 {
		runtime.GC()
	}
	time.Sleep(100 * time.Millisecond) // the last trace line may still be printing
}
`,
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		run        string
		min, max   int
		wantStdout string
	}{
		{"TestNothing", 0, 0, "ok"},
		{"TestCollect", 4, 6, "ok"},
	}
	// An empty build cache: the compiler and linker run, at least for
	// the first test.
	t.Setenv("GOCACHE", t.TempDir())
	t.Setenv("GOFLAGS", "-mod=mod")
	for _, tt := range tests {
		t.Run(tt.run, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			res, err := Run(t.Context(), []string{goBin, "test", "-C", mod, "-count=1", "-run", "^" + tt.run + "$", "."}, Options{Stdout: &stdout, Stderr: &stderr})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 || !strings.Contains(stdout.String(), tt.wantStdout) {
				t.Fatalf("exit %d, stdout %q, stderr %q", res.ExitCode, stdout.String(), stderr.String())
			}
			if n := len(res.Trace.Cycles); n < tt.min || n > tt.max {
				t.Errorf("%d GC cycles, want %d to %d: the test binary's alone", n, tt.min, tt.max)
			}
			if strings.Contains(stderr.String(), "gc 1 @") {
				t.Errorf("the trace was forwarded, not parsed: %s", stderr.String())
			}
		})
	}
}

func TestResult_Err(t *testing.T) {
	cycles := gcstats.Trace{Cycles: make([]gcstats.Cycle, 2)}
	tests := []struct {
		name        string
		res         Result
		interrupted bool
		want        string // "" for nil
	}{
		{"exited 0 after cycles", Result{Trace: cycles}, false, ""},
		{"interrupted before a cycle", Result{ExitCode: 130}, true, "interrupted before app printed a GC line"},
		{"interrupted after cycles", Result{Trace: cycles, ExitCode: 130}, true, "interrupted; the report covers app until then"},
		{"failed before a cycle", Result{ExitCode: 3}, false, "app exited with status 3 before any GC cycle"},
		{"failed after cycles", Result{Trace: cycles, ExitCode: 3}, false, "app exited with status 3"},
		{"go test without a cycle", Result{TestBinaries: true}, false, "the test binaries of go test ran no GC cycle (the go command's, the compiler's and the linker's own are left out)"},
		{"no cycle", Result{}, false, "app printed " + gcstats.ErrNoCycles.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.res.Err("app", tt.interrupted)
			if got := fmt.Sprint(err); tt.want == "" && err != nil || tt.want != "" && got != tt.want {
				t.Errorf("Err() = %v, want %q", err, tt.want)
			}
		})
	}
	if err := (Result{}).Err("app", false); !errors.Is(err, gcstats.ErrNoCycles) {
		t.Errorf("no cycle: %v does not wrap gcstats.ErrNoCycles", err)
	}
}
