package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/heapscope/heapscope/internal/bench"
	"github.com/heapscope/heapscope/internal/report"
)

// benchGateOptions are the comparison, gate and output flags shared by
// bench compare and bench run.
type benchGateOptions struct {
	bench.Options
	failOn []string
	format string
	junit  string
}

func (o *benchGateOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.failOn, "fail-on", nil, "gate `[NAME_REGEX:]UNIT>THRESHOLD`, such as 'B/op>+5%' or 'Process.*:allocs/op>+0%'; < for units where lower is worse; repeatable")
	fs.Float64Var(&o.Alpha, "alpha", bench.DefaultAlpha, "significance level: a change counts when p ≤ alpha")
	fs.IntVar(&o.MinRuns, "min-runs", bench.DefaultMinRuns, "runs per side below which a comparison is flagged")
	fs.BoolVar(&o.Strict, "strict", false, "too few runs is an error (exit 2), not a warning")
	fs.StringVar(&o.Ignore, "ignore", "", "configuration keys to compare across, as benchstat's -ignore (e.g. pkg)")
	fs.StringVar(&o.format, "format", "text", "output: text, markdown or json")
	fs.StringVar(&o.junit, "junit", "", "also write the result as JUnit XML to `FILE`")
}

// options returns the comparison's options, with the gates of --fail-on,
// and the output format.
func (o *benchGateOptions) options() (bench.Options, report.Format, error) {
	format, err := report.ParseFormat(o.format)
	if err != nil {
		return bench.Options{}, "", err
	}
	opts := o.Options
	opts.Gates, err = parseGates(o.failOn, bench.ParseGate)
	return opts, format, err
}

// finish writes the report and turns it into the command's outcome: exit 2
// for errors of the report (--strict), 1 for a failed gate.
func (o *benchGateOptions) finish(e *env, rep *bench.Report, format report.Format) error {
	doc := report.Bench{Report: rep}
	if err := report.Write(e.stdout, format, doc); err != nil {
		return fmt.Errorf("write the comparison: %w", err)
	}
	if o.junit != "" {
		if err := writeDocument(o.junit, report.FormatJUnit, doc); err != nil {
			return fmt.Errorf("write JUnit XML: %w", err)
		}
	}
	if len(rep.Errors) > 0 {
		return errors.Join(rep.Errors...)
	}
	if err := rep.GateError(); err != nil {
		return &codeError{code: exitGateFailed, err: err}
	}
	return nil
}

func newBenchCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Compare go test -bench results and gate CI on regressions",
		Long: `bench compares the output of go test -bench -benchmem between two versions
of some code with benchstat's statistics (medians, confidence intervals, a
Mann-Whitney U test), and gates on regressions: --fail-on fails (exit 1)
only when a change is both significant and beyond its threshold.

Exit codes: 0 success; 1 a gate failed; 2 usage or input error.`,
	}
	cmd.AddCommand(newBenchCompareCmd(e), newBenchRunCmd(e))
	return cmd
}

func newBenchCompareCmd(e *env) *cobra.Command {
	o := &benchGateOptions{}
	cmd := &cobra.Command{
		Use:   "compare OLD NEW",
		Short: "Compare two go test -bench outputs, with gates",
		Long: `compare reads two outputs of go test -bench -benchmem (files, or - for
stdin) and prints, per configuration and unit, the median of each side with
its confidence interval and the change with its p-value, as benchstat does;
"~" marks a change that is not significant.

--fail-on '[NAME_REGEX:]UNIT>THRESHOLD' (repeatable) fails the command (exit
1) when a change is significant and beyond the threshold. THRESHOLD is a
relative change (+5%) or an absolute one in the unit (50 with ns/op); use <
for units where lower is worse ('B/s<-5%'). A change beyond the threshold
that is not significant is a warning: more runs would decide. Fewer than
--min-runs runs per side is a warning, or an error with --strict.`,
		Example: `  go test -run '^$' -bench . -benchmem -count 10 ./... > old.txt
  # change the code, then
  go test -run '^$' -bench . -benchmem -count 10 ./... > new.txt
  heapscope bench compare old.txt new.txt --fail-on 'B/op>+5%' --fail-on 'sec/op>+10%'

  # the same benchmark in two packages, as Markdown for a pull request
  heapscope bench compare --ignore pkg leaky.txt optimized.txt --format markdown

  # JUnit XML for the CI's test view
  heapscope bench compare old.txt new.txt --fail-on 'Process.*:allocs/op>+0%' --junit bench.xml`,
		Args: exactArgs(2, "OLD and NEW, two go test -bench outputs (- for stdin)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBenchCompare(e, args[0], args[1], o)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func runBenchCompare(e *env, oldPath, newPath string, o *benchGateOptions) error {
	opts, format, err := o.options()
	if err != nil {
		return err
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	rep, err := bench.CompareFiles(oldPath, newPath, e.stdin, opts)
	if err != nil {
		return fmt.Errorf("bench compare: %w", err)
	}
	return o.finish(e, rep, format)
}

type benchRunOptions struct {
	benchGateOptions
	run bench.RunOptions
	out string
}

func newBenchRunCmd(e *env) *cobra.Command {
	o := &benchRunOptions{}
	cmd := &cobra.Command{
		Use:   "run [packages]",
		Short: "Benchmark the working tree against a git ref, with gates and attribution",
		Long: `run benchmarks the working tree against the git ref --base, checked out in
a temporary git worktree: it runs go test -run '^$' -bench REGEXP -benchmem
-count 1 --count times on each side, alternating which side goes first so
that machine noise falls on both, then compares and gates as bench compare
does.

For every benchmark whose B/op or allocs/op grew significantly, it reruns
the benchmark once per side with -memprofile (every allocation recorded,
the same iteration count on both sides) and prints the allocation sites
that account for the change, per op, by file:line.

Packages default to the current directory's. Progress goes to stderr when
it is a terminal.`,
		Example: `  # what did the last commit do to the examples' Worker benchmarks?
  heapscope bench run ./examples/leakycache ./examples/optimizedcache \
      --bench Worker_Process --base HEAD~1 --fail-on 'B/op>+5%'

  # uncommitted changes against HEAD, ten runs per side, Markdown output
  heapscope bench run ./internal/pprofx --bench Top --format markdown`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBenchRun(cmd, e, args, o)
		},
	}
	fs := cmd.Flags()
	o.addFlags(fs)
	r := &o.run
	fs.StringVar(&r.Base, "base", "HEAD", "git `ref` to compare the working tree with")
	fs.StringVar(&r.Bench, "bench", ".", "benchmarks to run, as go test -bench `regexp`")
	fs.StringVar(&r.Benchtime, "benchtime", "", "go test -benchtime of every run, such as 2000x or 200ms")
	fs.IntVar(&r.Count, "count", bench.DefaultCount, "runs per side")
	fs.StringVarP(&r.Dir, "dir", "C", ".", "directory to run in, inside the working tree")
	fs.BoolVar(&r.NoAttribution, "no-attribution", false, "skip the profiled reruns of benchmarks whose allocations grew")
	fs.IntVar(&r.Sites, "sites", bench.DefaultSites, "allocation sites per attribution")
	fs.StringVar(&o.out, "out", "", "keep the raw outputs (base.txt, new.txt) and the profiles of attributions in `DIR`")
	return cmd
}

func runBenchRun(cmd *cobra.Command, e *env, pkgs []string, o *benchRunOptions) error {
	compare, format, err := o.options()
	if err != nil {
		return err
	}
	opts := o.run
	opts.Compare, opts.Packages = compare, pkgs
	if err := opts.Validate(); err != nil {
		return err
	}
	// Off a terminal too: a benchmark run takes minutes, and a CI log
	// should show it moving.
	bar := newStatus(e.stderr, true, 0)
	opts.Progress = func(s bench.RunProgress) { bar.Step(s.Done, s.Total, s.Step) }
	res, err := bench.Run(cmd.Context(), opts)
	bar.Finish()
	if err != nil {
		return err
	}
	if o.out != "" {
		if err := res.Save(o.out); err != nil {
			return fmt.Errorf("bench run: %w", err)
		}
	}
	return o.finish(e, res.Report, format)
}
