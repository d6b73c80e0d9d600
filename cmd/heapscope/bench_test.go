package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// benchFile is a real go test -bench output kept by internal/bench.
func benchFile(name string) string {
	return filepath.Join("..", "..", "internal", "bench", "testdata", "bench", name)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBenchCompare(t *testing.T) {
	leaky, optimized := benchFile("leakycache.txt"), benchFile("optimizedcache.txt")
	leakyData, err := os.ReadFile(leaky)
	if err != nil {
		t.Fatal(err)
	}
	fiveRuns := writeFile(t, "five.txt", "pkg: p\n"+strings.Repeat("BenchmarkA-2\t100\t10 ns/op\t64 B/op\n", 5))
	cases := []struct {
		name       string
		stdin      string
		args       []string
		code       int
		stdout     []string
		stderr     []string
		noStdout   bool
		notStdout  []string
		notStderrs []string
	}{
		{
			name: "the fix passes its gates",
			args: []string{leaky, optimized, "--ignore", "pkg", "--fail-on", "B/op>+5%", "--fail-on", "Process.*:allocs/op>+0%"},
			code: 0,
			stdout: []string{
				"B/op", "Worker_Process-2", "160.00 ± 0%", "22.00 ± 0%", "-86.25% (p=0.000 n=10)",
				"PASS   B/op>+5%", "no gate failed (2 decisions)",
			},
		},
		{
			name:   "the fix undone fails them",
			args:   []string{optimized, leaky, "--ignore", "pkg", "--fail-on", "B/op>+5%", "--fail-on", "sec/op>+1000%"},
			code:   1,
			stdout: []string{"FAIL   B/op>+5%", "+627.27%", "1 of 2 gate decisions failed"},
			stderr: []string{"heapscope: 1 gate decision failed: B/op>+5% on Worker_Process-2: B/op +627.27% is beyond +5% and significant"},
		},
		{
			name:   "stdin",
			stdin:  string(leakyData),
			args:   []string{"-", leaky},
			stdout: []string{"stdin", "~ (p=1.000 n=10)"},
		},
		{
			name:   "markdown",
			args:   []string{leaky, optimized, "--ignore", "pkg", "--format", "markdown"},
			stdout: []string{"## Benchmarks: `" + leaky + "` → `" + optimized + "`", "| **-86.25%** (p=0.000 n=10) |"},
		},
		{
			name:     "empty file",
			args:     []string{writeFile(t, "empty.txt", ""), leaky},
			code:     2,
			stderr:   []string{"no benchmark results in", "empty.txt", "want go test -bench output"},
			noStdout: true,
		},
		{
			name:     "not a benchmark file",
			args:     []string{leaky, writeFile(t, "notes.txt", "# notes\nsome: thing\nPASS\n")},
			code:     2,
			stderr:   []string{"no benchmark results in", "notes.txt"},
			noStdout: true,
		},
		{
			name:     "mismatched names",
			args:     []string{leaky, writeFile(t, "other.txt", strings.ReplaceAll(string(leakyData), "Worker_Process", "Handler_Get"))},
			code:     2,
			stderr:   []string{"no benchmark in common", "has Worker_Process-2", "has Handler_Get-2"},
			noStdout: true,
		},
		{
			name:     "different packages",
			args:     []string{leaky, optimized},
			code:     2,
			stderr:   []string{"differ in pkg", "--ignore pkg"},
			noStdout: true,
		},
		{
			name:     "a gate's unit has no values",
			args:     []string{leaky, leaky, "--fail-on", "MB/s<-5%"},
			code:     2,
			stderr:   []string{"gate MB/s<-5%: no benchmark reports B/s (the inputs have sec/op, B/op, allocs/op)"},
			noStdout: true,
		},
		{
			name:     "malformed gate",
			args:     []string{leaky, optimized, "--fail-on", "B/op+5%"},
			code:     2,
			stderr:   []string{`--fail-on: gate "B/op+5%": no > or <`, "want [NAME_REGEX:]UNIT>THRESHOLD", "'B/op>+5%'"},
			noStdout: true,
		},
		{
			name:     "missing file",
			args:     []string{leaky, filepath.Join(t.TempDir(), "nope.txt")},
			code:     2,
			stderr:   []string{"nope.txt: no such file"},
			noStdout: true,
		},
		{name: "both stdin", args: []string{"-", "-"}, code: 2, stderr: []string{"only one of OLD and NEW"}, noStdout: true},
		{name: "bad format", args: []string{leaky, leaky, "--format", "html"}, code: 2, stderr: []string{`format "html"`}, noStdout: true},
		{name: "bad alpha", args: []string{leaky, leaky, "--alpha", "2"}, code: 2, stderr: []string{"--alpha 2"}, noStdout: true},
		{name: "one argument", args: []string{leaky}, code: 2, stderr: []string{"compare takes OLD and NEW"}, noStdout: true},
		{
			name:      "too few runs warns",
			args:      []string{fiveRuns, fiveRuns},
			code:      0,
			stdout:    []string{"warning: too few runs: 10 runs per side are needed", "A-2 (5+5)"},
			notStdout: []string{"error:"},
		},
		{
			name:   "too few runs with --strict",
			args:   []string{fiveRuns, fiveRuns, "--strict"},
			code:   2,
			stdout: []string{"A-2", "error: too few runs"},
			stderr: []string{"heapscope: too few runs", "-count 10"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inv := heapscopeIn(t, c.stdin, append([]string{"bench", "compare"}, c.args...)...)
			if inv.code != c.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", inv.code, c.code, inv.stdout, inv.stderr)
			}
			for _, w := range c.stdout {
				if !strings.Contains(inv.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, inv.stdout)
				}
			}
			for _, w := range c.notStdout {
				if strings.Contains(inv.stdout, w) {
					t.Errorf("stdout has %q:\n%s", w, inv.stdout)
				}
			}
			for _, w := range c.stderr {
				if !strings.Contains(inv.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, inv.stderr)
				}
			}
			if c.noStdout && inv.stdout != "" {
				t.Errorf("stdout is not empty on an input error:\n%s", inv.stdout)
			}
			if c.code == 0 && inv.stderr != "" {
				t.Errorf("stderr on success:\n%s", inv.stderr)
			}
		})
	}
}

func TestBenchCompare_jsonAndJUnit(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "bench.xml")
	inv := heapscope(t, "bench", "compare", benchFile("services-a.txt"), benchFile("services-b.txt"),
		"--format", "json", "--junit", junit, "--fail-on", "B/op>+5%", "--fail-on", "Evicting:sec/op>+1%")
	if inv.code != 0 {
		t.Fatalf("exit %d: %s", inv.code, inv.stderr)
	}
	var rep struct {
		Failed    bool `json:"failed"`
		Tables    []struct{ Unit string }
		Decisions []struct {
			Outcome string `json:"outcome"`
		}
	}
	if err := json.Unmarshal([]byte(inv.stdout), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, inv.stdout)
	}
	if rep.Failed || len(rep.Tables) != 6 || len(rep.Decisions) != 12 {
		t.Errorf("failed %v, %d tables, %d decisions; want false, 6, 12", rep.Failed, len(rep.Tables), len(rep.Decisions))
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests  int `xml:"tests,attr"`
		Suites []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("JUnit file: %v\n%s", err, data)
	}
	if doc.Tests != 10 || len(doc.Suites) != 2 || doc.Suites[0].Name != "github.com/heapscope/heapscope/examples/leakycache" {
		t.Errorf("JUnit: %d tests in %d suites (first %q), want 10 in 2, leakycache first", doc.Tests, len(doc.Suites), doc.Suites[0].Name)
	}
}

// gitRepo makes a module with one benchmark in a new git repository, in
// two commits: the second allocates a second buffer per call.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "git", append([]string{"-c", "user.name=heapscope test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q")
	write("go.mod", "module example.com/benchrun\n\ngo 1.22\n")
	write("work_test.go", `package benchrun

import "testing"

var sink []byte

func BenchmarkProcess(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		sink = Process(64)
	}
}
`)
	write("work.go", `package benchrun

// Process returns a buffer of n bytes.
func Process(n int) []byte {
	buf := make([]byte, n)
	return buf
}
`)
	git("add", ".")
	git("commit", "-q", "-m", "one buffer")
	write("work.go", `package benchrun

var kept [][]byte

// Process returns a buffer of n bytes, and keeps a copy.
func Process(n int) []byte {
	buf := make([]byte, n)
	kept = append(kept[:0], append([]byte(nil), buf...))
	return buf
}
`)
	git("commit", "-q", "-a", "-m", "keep a copy")
	return dir
}

// TestBenchRun runs bench run for real: git worktree, go test on both
// sides, the gate and the attribution of the new allocation.
func TestBenchRun(t *testing.T) {
	dir := gitRepo(t)
	out := filepath.Join(t.TempDir(), "raw")
	junit := filepath.Join(t.TempDir(), "bench.xml")
	// Four runs per side are the fewest for p < 0.05; --strict is off, so
	// too few runs is a warning. B/op is the run's total over its
	// iterations, background allocations included: 20000 of them make a
	// few KiB of those round away.
	inv := heapscope(t, "bench", "run", "-C", dir, "--base", "HEAD~1", "--bench", "Process",
		"--benchtime", "20000x", "--count", "4", "--fail-on", "B/op>+5%", "--out", out, "--junit", junit)
	if inv.code != 1 {
		t.Fatalf("exit %d, want 1 (the gate fails)\nstdout:\n%s\nstderr:\n%s", inv.code, inv.stdout, inv.stderr)
	}
	// The benchmark's name ends in -GOMAXPROCS, which depends on the
	// machine.
	for _, w := range []string{
		"pkg: example.com/benchrun",
		"HEAD~1", "working tree",
		"64.00 ± ∞", "128.00 ± ∞", "+100.00% (p=0.029 n=4)",
		"FAIL   B/op>+5%",
		"allocates (B/op +100.00%, allocs/op +100.00%), per op over 20000 iterations of each side with -memprofile",
		"work.go:8", "+64 B", "0 B → 64 B", "benchrun.Process",
		"warning: too few runs",
	} {
		if !strings.Contains(inv.stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, inv.stdout)
		}
	}
	// stderr is no terminal here, as in a CI log: the runs still show.
	for _, w := range []string{"] HEAD~1, run 1 of 4\n", "] working tree, run 4 of 4\n"} {
		if !strings.Contains(inv.stderr, w) {
			t.Errorf("stderr lacks the progress line %q:\n%s", w, inv.stderr)
		}
	}
	// The unchanged allocation (line 7 on both sides) is no part of the
	// change.
	if strings.Contains(inv.stdout, "work.go:7") {
		t.Errorf("the unchanged allocation is attributed:\n%s", inv.stdout)
	}
	// Only the new allocation is attributed: no noise below it.
	if i := strings.Index(inv.stdout, "work.go:8"); i < 0 || strings.Count(inv.stdout[i:], "\n") != 3 {
		t.Errorf("more sites than the new allocation:\n%s", inv.stdout)
	}
	if !strings.Contains(inv.stderr, "gate decision failed: B/op>+5% on Process") {
		t.Errorf("stderr: %s", inv.stderr)
	}
	for _, pattern := range []string{"base.txt", "new.txt", "mem-Process*-base.pprof", "mem-Process*-new.pprof"} {
		matches, _ := filepath.Glob(filepath.Join(out, pattern))
		if len(matches) != 1 {
			t.Errorf("--out: %d files match %s, want 1", len(matches), pattern)
			continue
		}
		if fi, err := os.Stat(matches[0]); err != nil || fi.Size() == 0 {
			t.Errorf("--out %s: empty or unreadable (%v)", matches[0], err)
		}
	}
	if data, err := os.ReadFile(junit); err != nil || !strings.Contains(string(data), `<failure type="gate"`) {
		t.Errorf("JUnit file without the failure (%v):\n%s", err, data)
	}
	// The temporary worktree is gone.
	list, err := exec.CommandContext(t.Context(), "git", "-C", dir, "worktree", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.TrimSpace(string(list)), "\n") + 1; n != 1 {
		t.Errorf("%d worktrees left, want 1:\n%s", n, list)
	}
}

func TestBenchRun_badInput(t *testing.T) {
	dir := gitRepo(t)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown ref", []string{"-C", dir, "--base", "no-such-ref", "--count", "1"}, `"no-such-ref" is not a commit`},
		{"not a repository", []string{"-C", t.TempDir(), "--base", "HEAD", "--count", "1"}, "find the git repository"},
		{"zero count", []string{"-C", dir, "--count", "0"}, "--count 0"},
		{"malformed gate", []string{"-C", dir, "--fail-on", "B/op>>5"}, "want [NAME_REGEX:]UNIT>THRESHOLD"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inv := heapscope(t, append([]string{"bench", "run"}, c.args...)...)
			if inv.code != 2 || !strings.Contains(inv.stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", inv.code, inv.stderr, c.want)
			}
		})
	}
}
