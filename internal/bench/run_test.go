package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeToolchain plays git and go test: the base side allocates oldBytes
// per op in BenchmarkProcess, the working tree newBytes.
type fakeToolchain struct {
	t                  *testing.T
	top, wt            string
	oldBytes, newBytes int
	testErr            error

	sides    []string // "base" or "new", per go test run
	args     [][]string
	profiled []string // dir and args of MemProfile calls
	removed  bool
}

var _ Toolchain = (*fakeToolchain)(nil)

func (f *fakeToolchain) Toplevel(ctx context.Context, dir string) (string, error) {
	return f.top, nil
}

func (f *fakeToolchain) AddWorktree(ctx context.Context, repo, ref string) (string, func() error, error) {
	if repo != f.top || ref != "HEAD~1" {
		f.t.Errorf("AddWorktree(%q, %q), want %q and HEAD~1", repo, ref, f.top)
	}
	return f.wt, func() error { f.removed = true; return nil }, nil
}

func (f *fakeToolchain) side(dir string) (string, int) {
	switch {
	case strings.HasPrefix(dir, f.wt):
		return "base", f.oldBytes
	case strings.HasPrefix(dir, f.top):
		return "new", f.newBytes
	}
	f.t.Errorf("go test in %s, outside both trees", dir)
	return "", 0
}

func (f *fakeToolchain) Test(ctx context.Context, dir string, args []string) ([]byte, error) {
	side, b := f.side(dir)
	f.sides = append(f.sides, side)
	f.args = append(f.args, args)
	if f.testErr != nil && side == "base" {
		return nil, f.testErr
	}
	return []byte(fmt.Sprintf("goos: linux\npkg: example.com/p\nBenchmarkProcess-2\t1000\t%d ns/op\t%d B/op\t1 allocs/op\nBenchmarkStable-2\t500\t10 ns/op\t0 B/op\t0 allocs/op\nPASS\nok\texample.com/p\t0.1s\n",
		100+len(f.sides), b)), nil
}

func (f *fakeToolchain) MemProfile(ctx context.Context, dir, pkg string, args []string) ([]byte, []byte, error) {
	side, b := f.side(dir)
	f.profiled = append(f.profiled, side+" "+pkg+" "+strings.Join(args, " "))
	root := f.top
	if side == "base" {
		root = f.wt
	}
	p := heapProfile(alloc{"example.com/p.Process", root + "/p.go", 7, 1000, int64(1000 * b)})
	return []byte("pkg: example.com/p\nBenchmarkProcess-2\t1000\t100 ns/op\n"), profileBytes(f.t, p), nil
}

func newFake(t *testing.T) *fakeToolchain {
	top, wt := t.TempDir(), t.TempDir()
	for _, d := range []string{top, wt} {
		if err := os.WriteFile(filepath.Join(d, "p.go"), []byte("package p\n\n\n\n\n\n\tb := make([]byte, n)\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &fakeToolchain{t: t, top: top, wt: wt, oldBytes: 16, newBytes: 32}
}

func TestRun(t *testing.T) {
	f := newFake(t)
	var steps []RunProgress
	res, err := Run(t.Context(), RunOptions{
		Dir: f.top, Base: "HEAD~1", Packages: []string{"./..."}, Bench: "Process|Stable", Benchtime: "100x",
		Count: 4, Toolchain: f, Progress: func(p RunProgress) { steps = append(steps, p) },
		Compare: Options{MinRuns: 4, Alpha: 0.05, Gates: mustGates(t, "B/op>+5%")},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	// Alternating: the side that goes first changes every round.
	if want := []string{"base", "new", "new", "base", "base", "new", "new", "base"}; !slices.Equal(f.sides, want) {
		t.Errorf("runs %v, want %v", f.sides, want)
	}
	wantArgs := []string{"-run", "^$", "-bench", "Process|Stable", "-benchmem", "-count", "1", "-benchtime", "100x", "./..."}
	for _, a := range f.args {
		if !slices.Equal(a, wantArgs) {
			t.Errorf("go test %v, want %v", a, wantArgs)
		}
	}
	// Only Process grew: one profiled run per side, same iterations.
	wantProfiled := []string{
		"base example.com/p -run ^$ -bench ^BenchmarkProcess$ -benchmem -count 1 -benchtime 1000x -cpu 2",
		"new example.com/p -run ^$ -bench ^BenchmarkProcess$ -benchmem -count 1 -benchtime 1000x -cpu 2",
	}
	if !slices.Equal(f.profiled, wantProfiled) {
		t.Errorf("profiled runs:\n%s\nwant:\n%s", strings.Join(f.profiled, "\n"), strings.Join(wantProfiled, "\n"))
	}
	if !f.removed {
		t.Error("the worktree was not removed")
	}
	rep := res.Report
	if rep.Old != "HEAD~1" || rep.New != NewLabel || !rep.Failed() {
		t.Errorf("report %s → %s failed %v, want HEAD~1 → %s and a failed gate", rep.Old, rep.New, rep.Failed(), NewLabel)
	}
	if len(rep.Attributions) != 1 {
		t.Fatalf("%d attributions, want 1: %+v", len(rep.Attributions), rep.Attributions)
	}
	a := rep.Attributions[0]
	want := SiteDelta{Function: "example.com/p.Process", File: "p.go", Line: 7, OldBytes: 16, NewBytes: 32, OldObjects: 1, NewObjects: 1}
	if a.Err != "" || a.Benchmark != "Process-2" || a.Iters != 1000 || len(a.Sites) != 1 || a.Sites[0] != want {
		t.Errorf("attribution %+v, want Process-2 over 1000 iterations with site %+v", a, want)
	}
	if !slices.Equal(a.Regressed, []string{"B/op +100.00%"}) {
		t.Errorf("regressed %v, want B/op +100.00%%", a.Regressed)
	}
	if len(res.Profiles) != 1 || len(res.Profiles[0].Old) == 0 || len(res.Profiles[0].New) == 0 {
		t.Errorf("profiles %d, want one pair", len(res.Profiles))
	}
	if got := strings.Count(string(res.Old), "BenchmarkProcess-2"); got != 4 {
		t.Errorf("old output holds %d Process runs, want 4", got)
	}
	last := steps[len(steps)-1]
	if last.Done != last.Total || last.Total != 10 || last.Step != "done" {
		t.Errorf("last progress %+v, want 10 of 10 done", last)
	}
	for i := 1; i < len(steps); i++ {
		if steps[i].Done < steps[i-1].Done {
			t.Errorf("progress went back: %+v then %+v", steps[i-1], steps[i])
		}
	}
}

func TestRun_subdirectory(t *testing.T) {
	f := newFake(t)
	sub := filepath.Join(f.top, "examples", "svc")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	f.newBytes = f.oldBytes
	var dirs []string
	tc := &dirRecorder{fakeToolchain: f, dirs: &dirs}
	if _, err := Run(t.Context(), RunOptions{Dir: sub, Base: "HEAD~1", Count: 1, Toolchain: tc, Compare: Options{MinRuns: 1}}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []string{filepath.Join(f.wt, "examples", "svc"), filepath.Join(f.top, "examples", "svc")}
	if !slices.Equal(dirs, want) {
		t.Errorf("go test ran in %v, want %v", dirs, want)
	}
	if len(f.profiled) != 0 {
		t.Errorf("profiled %v without a regression", f.profiled)
	}
}

type dirRecorder struct {
	*fakeToolchain
	dirs *[]string
}

func (d *dirRecorder) Test(ctx context.Context, dir string, args []string) ([]byte, error) {
	*d.dirs = append(*d.dirs, dir)
	return d.fakeToolchain.Test(ctx, dir, args)
}

func TestRun_errors(t *testing.T) {
	t.Run("go test fails", func(t *testing.T) {
		f := newFake(t)
		f.testErr = errors.New("exit status 1: no Go files")
		_, err := Run(t.Context(), RunOptions{Dir: f.top, Base: "HEAD~1", Count: 2, Toolchain: f})
		if err == nil || !strings.Contains(err.Error(), "benchmarks of HEAD~1 (run 1 of 2)") || !strings.Contains(err.Error(), "no Go files") {
			t.Errorf("error %v, want the failed run named", err)
		}
		if !f.removed {
			t.Error("the worktree was not removed after the failure")
		}
	})
	for _, c := range []struct {
		name string
		o    RunOptions
		want string
	}{
		{"no base", RunOptions{}, "bench run: Base: give a git ref"},
		{"negative count", RunOptions{Base: "HEAD", Count: -1}, "bench run: Count -1: give a number of runs ≥ 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Run(t.Context(), c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

func TestBenchPattern(t *testing.T) {
	cases := []struct {
		name, pattern, procs string
	}{
		{"Worker_Process-2", "^BenchmarkWorker_Process$", "2"},
		{"Worker_Process", "^BenchmarkWorker_Process$", "1"},
		{"Parse/size=1k-8", "^BenchmarkParse$/^size=1k$", "8"},
		{"Get/a.b/c+d-16", `^BenchmarkGet$/^a\.b$/^c\+d$`, "16"},
	}
	for _, c := range cases {
		p, procs := benchPattern(c.name)
		if p != c.pattern || procs != c.procs {
			t.Errorf("benchPattern(%q) = %q, %q; want %q, %q", c.name, p, procs, c.pattern, c.procs)
		}
	}
}
