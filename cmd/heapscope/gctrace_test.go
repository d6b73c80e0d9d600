package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/report"
)

const gctraceLogs = "../../internal/gcstats/testdata/gctrace"

// rendered is what report renders of a gctrace log in a format: what the
// command must print or write (report's tests hold the golden files).
func rendered(t *testing.T, log string, f report.Format) string {
	t.Helper()
	r, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tr, err := gcstats.ParseTrace(r)
	if err != nil {
		t.Fatal(err)
	}
	s := gcstats.Summarize(tr)
	var b bytes.Buffer
	if err := report.Write(&b, f, report.GCTrace{Summary: &s}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestGCTrace_recorded runs gctrace on each toolchain's recorded log: it
// prints the report of it.
func TestGCTrace_recorded(t *testing.T) {
	logs, err := filepath.Glob(filepath.Join(gctraceLogs, "go1.*.txt"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no recorded logs: %v", err)
	}
	for _, log := range logs {
		t.Run(filepath.Base(log), func(t *testing.T) {
			inv := heapscope(t, "gctrace", log)
			if inv.code != 0 {
				t.Fatalf("exit %d: %s", inv.code, inv.stderr)
			}
			if want := rendered(t, log, report.FormatText); inv.stdout != want {
				t.Errorf("stdout:\n%s\nwant the report of the log:\n%s", inv.stdout, want)
			}
		})
	}
}

func TestGCTrace_formats(t *testing.T) {
	log := filepath.Join(gctraceLogs, "go1.26.txt")
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("json from stdin", func(t *testing.T) {
		inv := heapscopeIn(t, string(data), "gctrace", "--format", "json", "-")
		if inv.code != 0 {
			t.Fatalf("exit %d: %s", inv.code, inv.stderr)
		}
		var s gcstats.TraceSummary
		if err := json.Unmarshal([]byte(inv.stdout), &s); err != nil {
			t.Fatal(err)
		}
		if s.Cycles != 12 || len(s.Series) != 12 || s.LeakChecks != 1 || s.Periodic != 1 || s.Scavenger == nil {
			t.Errorf("summary %+v", s)
		}
	})

	dir := t.TempDir()
	for _, name := range []string{"heap.svg", "heap.html"} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(dir, name)
			inv := heapscope(t, "gctrace", log, "--plot", out)
			if inv.code != 0 {
				t.Fatalf("exit %d: %s", inv.code, inv.stderr)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			f, _ := report.FormatOf(name, report.FormatSVG, report.FormatHTML)
			if want := rendered(t, log, f); string(got) != want {
				t.Errorf("%s is not the report's plot of the log:\n%.300s", name, got)
			}
		})
	}
}

func TestGCTrace_errors(t *testing.T) {
	dir := t.TempDir()
	noGC := filepath.Join(dir, "app.log")
	if err := os.WriteFile(noGC, []byte("listening on :8080\nshutting down\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(gctraceLogs, "go1.22.txt")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no GC lines", []string{"gctrace", noGC}, "no gctrace lines"},
		{"missing file", []string{"gctrace", filepath.Join(dir, "nope.log")}, "no such file"},
		{"two logs", []string{"gctrace", log, log}, "takes one LOG"},
		{"log and command", []string{"gctrace", log, "--", "true"}, "not both"},
		{"empty command", []string{"gctrace", "--"}, "give the command"},
		{"bad plot", []string{"gctrace", log, "--plot", filepath.Join(dir, "x.png")}, ".svg or .html"},
		{"bad format", []string{"gctrace", log, "--format", "csv"}, `--format "csv"`},
		{"command not found", []string{"gctrace", "--", filepath.Join(dir, "no-such-program")}, "run "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := heapscope(t, tt.args...)
			if inv.code != exitUsage || !strings.Contains(inv.stderr, tt.want) || strings.Count(strings.TrimSpace(inv.stderr), "\n") != 0 {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line with %q", inv.code, inv.stderr, tt.want)
			}
			if inv.stdout != "" {
				t.Errorf("stdout %q", inv.stdout)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files left behind: %v", entries)
	}
}

// buildGCTraceGen builds the program that recorded the logs, with the
// local toolchain.
func buildGCTraceGen(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gctracegen")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join(gctraceLogs, "gen")
	build.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build gctracegen: %v\n%s", err, out)
	}
	return bin
}

// TestGCTrace_command runs a real Go program under gctrace --.
func TestGCTrace_command(t *testing.T) {
	bin := buildGCTraceGen(t)

	t.Run("succeeds", func(t *testing.T) {
		// A GODEBUG of the caller's is kept: scavtrace lines appear.
		t.Setenv("GODEBUG", "scavtrace=1")
		inv := heapscope(t, "gctrace", "--format", "json", "--", bin, "-quick")
		if inv.code != 0 {
			t.Fatalf("exit %d: %s", inv.code, inv.stderr)
		}
		// The program's stdout first, then the report.
		out, report, ok := strings.Cut(inv.stdout, "\n")
		if !ok || !strings.HasPrefix(out, "done go1.") {
			t.Fatalf("stdout does not start with the program's: %q", inv.stdout)
		}
		var s gcstats.TraceSummary
		if err := json.Unmarshal([]byte(report), &s); err != nil {
			t.Fatal(err)
		}
		// gctracegen forces 3 cycles with runtime.GC and one with
		// FreeOSMemory; a call that finds a background cycle under way
		// waits for it instead of starting its own (runtime.GC's
		// gcTriggerCycle), so a busy machine may print fewer "(forced)".
		if s.Cycles < 4 || s.Forced < 2 || s.Scavenger == nil {
			t.Errorf("summary: %d cycles, %d forced, scavenger %v", s.Cycles, s.Forced, s.Scavenger)
		}
		if strings.Contains(inv.stderr, "gc 1 @") || strings.Contains(inv.stderr, "scav ") {
			t.Errorf("GC lines forwarded to stderr: %q", inv.stderr)
		}
	})

	t.Run("fails after GC lines", func(t *testing.T) {
		inv := heapscope(t, "gctrace", "--", "sh", "-c", bin+" -quick; echo 'app: giving up' >&2; exit 4")
		if inv.code != 4 {
			t.Errorf("exit %d, want the command's 4", inv.code)
		}
		if !strings.Contains(inv.stdout, "GC cycles from") {
			t.Errorf("no report on stdout: %q", inv.stdout)
		}
		if !strings.Contains(inv.stderr, "app: giving up\n") || !strings.Contains(inv.stderr, "exited with status 4") {
			t.Errorf("stderr %q: want the program's line and the status", inv.stderr)
		}
	})

	t.Run("fails without GC lines", func(t *testing.T) {
		inv := heapscope(t, "gctrace", "--", "sh", "-c", "exit 3")
		if inv.code != 3 || !strings.Contains(inv.stderr, "before any GC cycle") {
			t.Errorf("exit %d, stderr %q", inv.code, inv.stderr)
		}
	})

	t.Run("succeeds without GC lines", func(t *testing.T) {
		inv := heapscope(t, "gctrace", "--", "sh", "-c", "echo hello >&2")
		if inv.code != exitUsage || !strings.Contains(inv.stderr, "no gctrace lines") || !strings.HasPrefix(inv.stderr, "hello\n") {
			t.Errorf("exit %d, stderr %q", inv.code, inv.stderr)
		}
	})
}
