package main

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/allocbench"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/units"
)

type allocbenchOptions struct {
	allocbench.RunOptions
	goList  string
	pattern string
	liveMiB int
	format  string
	out     string
	from    string
}

func newAllocbenchCmd(e *env) *cobra.Command {
	o := &allocbenchOptions{}
	cmd := &cobra.Command{
		Use:   "allocbench",
		Short: "Run allocation patterns under several Go toolchains: RSS against the runtime's accounting",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAllocbench(cmd, e, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.goList, "go", "local", "toolchains, comma-separated: local (the installed go) or releases such as go1.23.12,go1.24.3,go1.25.0")
	fs.IntVar(&o.Count, "count", 5, "runs per pattern and toolchain")
	fs.StringVar(&o.pattern, "pattern", "", "run only the patterns whose name matches this regular expression")
	fs.StringVar(&o.format, "format", "text", "output: text, json or markdown")
	fs.StringVarP(&o.out, "output", "o", "", "also write a chart per pattern across toolchains: .svg or .html (chart and table)")
	fs.Float64Var(&o.Analysis.Alpha, "alpha", allocbench.DefaultAlpha, "significance level of the Mann-Whitney U test")
	fs.Float64Var(&o.Analysis.MinEffect, "min-effect", allocbench.DefaultMinEffect, "smallest relative difference of RSS/heap that is flagged, such as 0.25 for 25%")
	fs.IntVar(&o.liveMiB, "live", allocbench.DefaultLive>>20, "MiB each pattern keeps live")
	fs.Var(units.NewDuration(&o.Timeout, time.Minute), "timeout", "limit of one child run")
	fs.StringVar(&o.from, "from", "", "analyse the runs of a saved --format json report instead of running (- for stdin): other thresholds, another format")
	return withHelp(cmd, "allocbench")
}

func runAllocbench(cmd *cobra.Command, e *env, o *allocbenchOptions) error {
	if o.from != "" {
		return runAllocbenchFrom(cmd, e, o)
	}
	if runtime.GOOS != "linux" {
		return errors.New("allocbench reads /proc: Linux only")
	}
	format, out, err := o.outputs()
	if err != nil {
		return err
	}
	opts := o.RunOptions
	if opts.Toolchains, err = allocbench.ParseToolchains(o.goList); err != nil {
		return fmt.Errorf("--go: %w", err)
	}
	opts.Live = o.liveMiB << 20
	if err := opts.Validate(); err != nil {
		return err
	}
	re, err := compileFlag("--pattern", o.pattern)
	if err != nil {
		return err
	}
	if opts.Patterns, err = allocbench.Filter(allocbench.Matrix(), re); err != nil {
		return fmt.Errorf("--pattern: %w", err)
	}
	prog := newStatus(e.stderr, true, 0)
	opts.Progress = func(s allocbench.Progress) { prog.Step(s.Done, s.Total, s.Step) }
	rep, m, runErr := allocbench.Run(cmd.Context(), opts)
	prog.Finish()
	if rep == nil {
		return fmt.Errorf("allocbench: %w", runErr)
	}
	if len(m.Toolchains) > 0 {
		if err := o.write(e, rep, format, out); err != nil {
			return err
		}
	}
	if runErr != nil {
		return fmt.Errorf("allocbench interrupted after %d runs: %w", len(m.Samples), runErr)
	}
	if err := m.Err(); err != nil {
		return &codeError{code: exitPartial, err: fmt.Errorf("allocbench: %w", err)}
	}
	return nil
}

// runAllocbenchFrom analyses the runs of a saved JSON report.
func runAllocbenchFrom(cmd *cobra.Command, e *env, o *allocbenchOptions) error {
	for _, name := range []string{"go", "count", "pattern", "live", "timeout"} {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--%s is about running; --from analyses runs already made", name)
		}
	}
	format, out, err := o.outputs()
	if err != nil {
		return err
	}
	if err := o.Analysis.Validate(); err != nil {
		return err
	}
	in, err := e.open(o.from)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	defer in.Close()
	rep, err := allocbench.AnalyseSaved(in, o.Analysis)
	if err != nil {
		return fmt.Errorf("--from %s: %w", o.from, err)
	}
	return o.write(e, rep, format, out)
}

// outputs checks --format and -o.
func (o *allocbenchOptions) outputs() (format, out report.Format, err error) {
	if format, err = report.ParseFormat(o.format); err != nil {
		return "", "", err
	}
	out, err = report.OutputFormat("-o", o.out, report.FormatSVG, report.FormatHTML)
	return format, out, err
}

// write prints the report and writes the chart of -o.
func (o *allocbenchOptions) write(e *env, rep *allocbench.Report, format, out report.Format) error {
	doc := report.Allocbench{Report: rep}
	if err := report.Write(e.stdout, format, doc); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	if o.out == "" {
		return nil
	}
	if err := report.WriteFile(o.out, out, doc); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "wrote %s\n", o.out)
	return nil
}
