package main

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/allocbench"
	"github.com/heapscope/heapscope/internal/report"
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
		Long: `allocbench runs a matrix of allocation patterns, each in a child process of
its own, under every Go toolchain of --go, and compares the resident size of
the Go heap with what the runtime says it allocated. It is the lab that
finds allocator regressions such as golang/go#72991 (Go 1.24.0 to 1.24.5
zeroed large pointer-holding allocations even when fresh from the OS,
making untouched memory resident).

Patterns are named SIZE-POINTERS-CONTAINER-LIFETIME-WRITES:
  SIZE        small (16 KiB objects) or large (4 MiB objects)
  POINTERS    ptr (elements hold pointers) or noptr
  CONTAINER   slice, chan (a buffered channel) or map (pre-sized)
  LIFETIME    retained, or transient (the live set replaced 4 times, a GC
              between)
  WRITES      full, or sparse (only the first sixteenth written, as a
              channel buffer or a preallocated slice often is)

Each toolchain (local, or a release such as go1.24.3) builds a small
embedded program in a module whose go line is 1.21; the go command fetches
releases through GOTOOLCHAIN from the module proxy. The child allocates
with the GC off, prints runtime.MemStats and waits while heapscope reads
its VmRSS and the Rss of its Go heap mappings from /proc/PID/smaps.

Per pattern and toolchain: medians over --count runs of HeapAlloc,
HeapInuse, HeapSys, HeapReleased, Sys, VmRSS, the heap mappings' Rss, and
RSS/heap (heap Rss per HeapAlloc byte) with its 95% confidence interval. A
pattern is flagged when two toolchains' RSS/heap differ both significantly
(Mann-Whitney U test, p ≤ --alpha) and by at least --min-effect.

Linux only. Exit codes: 0 success; 2 usage error or a toolchain that does
not exist; 3 some runs failed; 130 interrupted.`,
		Example: `  # the regression of Go 1.24.0–1.24.5, against the release before and the fix
  heapscope allocbench --go go1.23.12,go1.24.3,go1.25.0 -o allocbench.html

  # the large pointer-holding patterns only, three runs each, as JSON
  heapscope allocbench --go local,go1.24.3 --pattern '^large-ptr' --count 3 --format json

  # keep the runs, then table them for a README without running again
  heapscope allocbench --go go1.24.3,go1.24.6 --format json > runs.json
  heapscope allocbench --from runs.json --format markdown -o chart.svg`,
		Args: cobra.NoArgs,
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
	fs.DurationVar(&o.Timeout, "timeout", time.Minute, "limit of one child run")
	fs.StringVar(&o.from, "from", "", "analyse the runs of a saved --format json report instead of running (- for stdin): other thresholds, another format")
	return cmd
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
	out, err = outputFormat("-o", o.out, report.FormatSVG, report.FormatHTML)
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
	if err := writeDocument(o.out, out, doc); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "wrote %s\n", o.out)
	return nil
}
