package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/heapscope/heapscope/internal/option"
	"github.com/heapscope/heapscope/internal/pprofx"
)

// Toolchain reaches what Run needs outside the process: git and go test.
// ExecToolchain runs the real commands; tests use fakes.
type Toolchain interface {
	// Toplevel returns the root of the git working tree that holds dir.
	Toplevel(ctx context.Context, dir string) (string, error)
	// AddWorktree checks out ref of the repository at repo, detached,
	// into a new temporary directory, and returns the directory and a
	// function that removes it.
	AddWorktree(ctx context.Context, repo, ref string) (dir string, remove func() error, err error)
	// Test runs go test with args (packages last) in dir and returns its
	// standard output.
	Test(ctx context.Context, dir string, args []string) ([]byte, error)
	// MemProfile runs go test with args for the one package pkg in dir,
	// recording every allocation (-memprofile with -memprofilerate 1), and
	// returns its standard output and the profile.
	MemProfile(ctx context.Context, dir, pkg string, args []string) (stdout, profile []byte, err error)
}

// Defaults of RunOptions.
const (
	DefaultCount = 10
	DefaultSites = 5
	// MaxProfiledIters caps the iterations of a profiled run: with every
	// allocation recorded, a benchmark that ran millions of times would
	// take minutes.
	MaxProfiledIters = 200_000
)

// NewLabel is the label of the working tree's side.
const NewLabel = "working tree"

// RunOptions configure Run. Zero fields take the defaults.
type RunOptions struct {
	// Dir is where the packages are resolved, in the working tree; ""
	// means the current directory.
	Dir string
	// Base is the git ref to compare with (required).
	Base string
	// Packages are go test's package arguments; nil means ".".
	Packages []string
	// Bench is go test's -bench regexp; "" means ".".
	Bench string
	// Benchtime is go test's -benchtime; "" leaves go test's default.
	Benchtime string
	// Count is the number of runs per side; 0 means DefaultCount.
	Count int
	// Compare configures the comparison and its gates.
	Compare Options
	// NoAttribution skips the profiled reruns of regressed benchmarks.
	NoAttribution bool
	// Sites caps the sites of an attribution; 0 means DefaultSites.
	Sites int
	// Toolchain runs git and go; nil means ExecToolchain{}.
	Toolchain Toolchain
	// Progress, when set, is called before every go test run and when
	// all are done.
	Progress func(RunProgress)
}

// Validate reports the first option that cannot run as an
// *option.Error, those of Compare from within it (option.Within). Run
// fills the defaults of zero fields before it validates; Validate takes
// the options as they are, so a zero Count or Sites, which a command line
// gives only when its user typed 0, is an error here.
func (o RunOptions) Validate() error {
	if err := o.Compare.Validate(); err != nil {
		return option.Within("Compare", err)
	}
	switch {
	case o.Count < 1:
		return option.Errorf("Count", "{Count} %d: give a number of runs ≥ 1", o.Count)
	case o.Sites < 1:
		return option.Errorf("Sites", "{Sites} %d: give a number ≥ 1", o.Sites)
	case o.Base == "":
		return option.Errorf("Base", "{Base}: give a git ref, such as HEAD~1 or main")
	}
	return nil
}

// RunProgress is where Run is: Done of Total go test runs finished, and
// the step under way. Total grows when attribution reruns are added.
type RunProgress struct {
	Done, Total int
	Step        string
}

// RunResult is what Run produced.
type RunResult struct {
	Report *Report
	// Old and New are the standard outputs of every go test run of each
	// side, concatenated: benchmark files benchstat reads too.
	Old, New []byte
	// Profiles are the allocation profiles of the attributions.
	Profiles []ProfilePair
}

// ProfilePair is the allocation profile of one benchmark on each side.
type ProfilePair struct {
	Benchmark, Package string
	Old, New           []byte
}

// Run benchmarks the working tree against the git ref o.Base: it checks
// the ref out in a temporary worktree, runs go test -bench with -count 1
// o.Count times on each side, alternating which side goes first in each
// round so that drifting machine noise falls on both, compares the outputs
// as Compare does, and attributes every significant growth of B/op or
// allocs/op to allocation sites with one profiled run per side. A failed
// attribution is reported in the Attribution, not as an error.
func Run(ctx context.Context, o RunOptions) (*RunResult, error) {
	if o.Count == 0 {
		o.Count = DefaultCount
	}
	if o.Sites == 0 {
		o.Sites = DefaultSites
	}
	o.Compare = o.Compare.withDefaults()
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("bench run: %w", err)
	}
	if o.Dir == "" {
		o.Dir = "."
	}
	if o.Bench == "" {
		o.Bench = "."
	}
	if len(o.Packages) == 0 {
		o.Packages = []string{"."}
	}
	if o.Toolchain == nil {
		o.Toolchain = ExecToolchain{}
	}
	tc := o.Toolchain
	progress := o.Progress
	if progress == nil {
		progress = func(RunProgress) {}
	}

	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("bench run: %w", err)
	}
	top, err := tc.Toplevel(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("bench run: find the git repository of %s: %w", dir, err)
	}
	rel, err := relDir(top, dir)
	if err != nil {
		return nil, fmt.Errorf("bench run: %w", err)
	}
	wt, remove, err := tc.AddWorktree(ctx, top, o.Base)
	if err != nil {
		return nil, fmt.Errorf("bench run: check out %s: %w", o.Base, err)
	}
	removed := false
	defer func() {
		if !removed {
			_ = remove() // the run failed already; that error is the one to show
		}
	}()
	sides := [2]struct {
		label, root, dir string
		out              bytes.Buffer
	}{
		{label: o.Base, root: wt, dir: filepath.Join(wt, rel)},
		{label: NewLabel, root: top, dir: filepath.Join(top, rel)},
	}

	args := []string{"-run", "^$", "-bench", o.Bench, "-benchmem", "-count", "1"}
	if o.Benchtime != "" {
		args = append(args, "-benchtime", o.Benchtime)
	}
	args = append(args, o.Packages...)
	total := 2 * o.Count
	done := 0
	for round := range o.Count {
		order := []int{0, 1}
		if round%2 == 1 {
			order = []int{1, 0}
		}
		for _, i := range order {
			s := &sides[i]
			progress(RunProgress{Done: done, Total: total, Step: fmt.Sprintf("%s, run %d of %d", s.label, round+1, o.Count)})
			out, err := tc.Test(ctx, s.dir, args)
			if err != nil {
				return nil, fmt.Errorf("bench run: benchmarks of %s (run %d of %d): %w", s.label, round+1, o.Count, err)
			}
			s.out.Write(out)
			done++
		}
	}
	progress(RunProgress{Done: done, Total: total, Step: "comparing"})

	res := &RunResult{Old: sides[0].out.Bytes(), New: sides[1].out.Bytes()}
	rep, err := Compare(
		Input{Label: sides[0].label, R: bytes.NewReader(res.Old)},
		Input{Label: sides[1].label, R: bytes.NewReader(res.New)},
		o.Compare)
	if err != nil {
		return nil, err
	}
	res.Report = rep

	if !o.NoAttribution {
		cands := regressions(rep)
		total += 2 * len(cands)
		for _, c := range cands {
			a := Attribution{Benchmark: c.name, Package: c.pkg, Config: c.config, Regressed: c.regressed}
			if c.pkg == "" {
				a.Err = "no pkg: line in the benchmark output says which package to profile"
				rep.Attributions = append(rep.Attributions, a)
				continue
			}
			a.Iters = min(max(c.iters, 1), MaxProfiledIters)
			pargs := []string{"-run", "^$", "-bench", c.pattern, "-benchmem", "-count", "1",
				"-benchtime", fmt.Sprintf("%dx", a.Iters), "-cpu", c.procs}
			var profiled [2]Profiled
			var raw [2][]byte
			for i := range sides {
				s := &sides[i]
				progress(RunProgress{Done: done, Total: total, Step: fmt.Sprintf("%s, profile of %s", s.label, c.name)})
				out, prof, err := tc.MemProfile(ctx, s.dir, c.pkg, pargs)
				done++
				if err == nil {
					raw[i] = prof
					profiled[i], err = profiledRun(out, prof, c.name, a.Iters)
				}
				if err != nil {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					a.Err = fmt.Sprintf("profile %s on %s: %v", c.name, s.label, err)
					break
				}
				profiled[i].Root = s.root
				profiled[i].Source = os.DirFS(s.root)
			}
			if a.Err == "" {
				a.Sites, err = Attribute(profiled[0], profiled[1], AttributeOptions{N: o.Sites, ByObjects: c.byObjects, Focus: BenchmarkFocus()})
				if err != nil {
					a.Err = err.Error()
				}
				res.Profiles = append(res.Profiles, ProfilePair{Benchmark: c.name, Package: c.pkg, Old: raw[0], New: raw[1]})
			}
			rep.Attributions = append(rep.Attributions, a)
		}
	}
	progress(RunProgress{Done: total, Total: total, Step: "done"})
	removed = true
	if err := remove(); err != nil {
		rep.Warnings = append(rep.Warnings, fmt.Errorf("remove the worktree of %s: %w", o.Base, err))
	}
	return res, nil
}

// relDir is dir relative to the repository root top, both with symbolic
// links resolved.
func relDir(top, dir string) (string, error) {
	rt, err := filepath.EvalSymlinks(top)
	if err != nil {
		return "", err
	}
	rd, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(rt, rd)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is not inside the repository at %s", dir, top)
	}
	return rel, nil
}

// regression is a benchmark to attribute.
type regression struct {
	name, pkg string
	config    []ConfigValue
	regressed []string
	iters     int
	pattern   string // -bench pattern that selects exactly this benchmark
	procs     string // -cpu value
	byObjects bool
}

// regressions lists the benchmarks whose B/op or allocs/op grew
// significantly, once each.
func regressions(rep *Report) []regression {
	var out []regression
	for _, t := range rep.Tables {
		if t.Unit != "B/op" && t.Unit != "allocs/op" {
			continue
		}
		pkg := configGet(t.Config, "pkg")
		for _, r := range t.Rows {
			if r.Delta == nil || !r.Delta.Significant || r.New.Center <= r.Old.Center {
				continue
			}
			i := slices.IndexFunc(out, func(x regression) bool { return x.name == r.Name && configKey(x.config) == configKey(t.Config) })
			if i < 0 {
				pattern, procs := benchPattern(r.Name)
				out = append(out, regression{name: r.Name, pkg: pkg, config: t.Config, iters: r.New.Iters, pattern: pattern, procs: procs, byObjects: true})
				i = len(out) - 1
			}
			c := &out[i]
			c.regressed = append(c.regressed, t.Unit+" "+formatChange(r.Delta.Relative, true, t.Unit))
			if t.Unit == "B/op" {
				c.byObjects = false
			}
		}
	}
	return out
}

// benchPattern returns the -bench pattern that selects exactly the
// benchmark of a full name (each sub-benchmark level anchored) and the
// GOMAXPROCS it ran with, as a -cpu value.
func benchPattern(name string) (pattern, procs string) {
	base, parts := benchfmt.Name(name).Parts()
	pattern = "^Benchmark" + regexp.QuoteMeta(string(base)) + "$"
	procs = "1" // no suffix: GOMAXPROCS was 1
	for _, p := range parts {
		switch {
		case len(p) > 1 && p[0] == '-':
			procs = string(p[1:])
		case len(p) > 0 && p[0] == '/':
			pattern += "/^" + regexp.QuoteMeta(string(p[1:])) + "$"
		}
	}
	return pattern, procs
}

// profiledRun parses the profile of one profiled run and reads the
// benchmark's iteration count from the run's output, falling back to the
// count asked for.
func profiledRun(out, prof []byte, name string, iters int) (Profiled, error) {
	p, err := pprofx.Parse(prof, pprofx.DefaultMaxDecompressed)
	if err != nil {
		return Profiled{}, fmt.Errorf("read the allocation profile: %w", err)
	}
	r := benchfmt.NewReader(bytes.NewReader(out), "profiled run")
	for r.Scan() {
		if res, ok := r.Result().(*benchfmt.Result); ok && res.Name.String() == name && res.Iters > 0 {
			iters = res.Iters
			break
		}
	}
	return Profiled{Profile: p, Iters: iters}, nil
}
