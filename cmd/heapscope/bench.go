package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/heapscope/heapscope/internal/bench"
	"github.com/heapscope/heapscope/internal/gate"
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
	opts.Gates, err = gate.ParseAll("--fail-on", o.failOn, bench.ParseGate)
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
		if err := report.WriteFile(o.junit, report.FormatJUnit, doc); err != nil {
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
	}
	cmd.AddCommand(newBenchCompareCmd(e), newBenchRunCmd(e))
	return withHelp(cmd, "bench")
}

func newBenchCompareCmd(e *env) *cobra.Command {
	o := &benchGateOptions{}
	cmd := &cobra.Command{
		Use:   "compare OLD NEW",
		Short: "Compare two go test -bench outputs, with gates",
		Args:  exactArgs(2, "OLD and NEW, two go test -bench outputs (- for stdin)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBenchCompare(e, args[0], args[1], o)
		},
	}
	o.addFlags(cmd.Flags())
	return withHelp(cmd, "bench_compare")
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
	return withHelp(cmd, "bench_run")
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
