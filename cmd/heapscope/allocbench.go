package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/allocbench"
	"github.com/heapscope/heapscope/internal/atomicfile"
	"github.com/heapscope/heapscope/internal/report"
)

type allocbenchOptions struct {
	goList    string
	count     int
	pattern   string
	format    string
	out       string
	alpha     float64
	minEffect float64
	liveMiB   int
	timeout   time.Duration
	from      string
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
	fs.IntVar(&o.count, "count", 5, "runs per pattern and toolchain")
	fs.StringVar(&o.pattern, "pattern", "", "run only the patterns whose name matches this regular expression")
	fs.StringVar(&o.format, "format", "text", "output: text, json or markdown")
	fs.StringVarP(&o.out, "output", "o", "", "also write a chart per pattern across toolchains: .svg or .html (chart and table)")
	fs.Float64Var(&o.alpha, "alpha", allocbench.DefaultAlpha, "significance level of the Mann-Whitney U test")
	fs.Float64Var(&o.minEffect, "min-effect", allocbench.DefaultMinEffect, "smallest relative difference of RSS/heap that is flagged, such as 0.25 for 25%")
	fs.IntVar(&o.liveMiB, "live", allocbench.DefaultLive>>20, "MiB each pattern keeps live")
	fs.DurationVar(&o.timeout, "timeout", time.Minute, "limit of one child run")
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
	if err := checkAllocbenchOutputs(o); err != nil {
		return err
	}
	toolchains, err := allocbench.ParseToolchains(o.goList)
	if err != nil {
		return fmt.Errorf("--go: %w", err)
	}
	if o.count < 1 {
		return fmt.Errorf("--count %d: give a number ≥ 1", o.count)
	}
	if o.liveMiB < 8 || o.liveMiB > 4096 {
		return fmt.Errorf("--live %d: give a number of MiB from 8 to 4096", o.liveMiB)
	}
	re, err := compileFlag("--pattern", o.pattern)
	if err != nil {
		return err
	}
	patterns, err := allocbench.Filter(allocbench.Matrix(), re)
	if err != nil {
		return fmt.Errorf("--pattern: %w", err)
	}
	prog := newStatus(e.stderr, true, 0)
	rep, m, runErr := allocbench.Run(cmd.Context(), allocbench.RunOptions{
		MatrixOptions: allocbench.MatrixOptions{Toolchains: toolchains, Patterns: patterns, Count: o.count,
			Progress: func(s allocbench.Progress) { prog.Step(s.Done, s.Total, s.Step) }},
		Live: o.liveMiB << 20, Timeout: o.timeout, Analysis: allocbench.Options{Alpha: o.alpha, MinEffect: o.minEffect},
	})
	prog.Finish()
	if rep == nil {
		return fmt.Errorf("allocbench: %w", runErr)
	}
	if len(m.Toolchains) > 0 {
		if err := writeAllocbenchOutputs(e, rep, o); err != nil {
			return err
		}
	}
	if runErr != nil {
		return fmt.Errorf("allocbench interrupted after %d runs: %w", len(m.Samples), runErr)
	}
	if len(m.Failures) > 0 {
		return &codeError{code: exitPartial, err: fmt.Errorf("allocbench: %d of %d runs failed; the first: %w",
			len(m.Failures), len(m.Failures)+len(m.Samples), m.Failures[0])}
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
	if err := checkAllocbenchOutputs(o); err != nil {
		return err
	}
	var r io.Reader = e.stdin
	if o.from != "-" {
		f, err := os.Open(o.from)
		if err != nil {
			return fmt.Errorf("--from: %w", err)
		}
		defer f.Close()
		r = f
	}
	saved, err := allocbench.ReadSaved(r)
	if err != nil {
		return fmt.Errorf("--from %s: %w", o.from, err)
	}
	rep, err := allocbench.Analyse(saved.Runs, saved.Patterns, saved.Toolchains, saved.LiveBytes,
		allocbench.Options{Alpha: o.alpha, MinEffect: o.minEffect})
	if err != nil {
		return fmt.Errorf("--from %s: %w", o.from, err)
	}
	return writeAllocbenchOutputs(e, rep, o)
}

// checkAllocbenchOutputs checks the output and threshold flags.
func checkAllocbenchOutputs(o *allocbenchOptions) error {
	if _, err := report.ParseFormat(o.format); err != nil {
		return err
	}
	if !(o.alpha > 0 && o.alpha < 1) {
		return fmt.Errorf("--alpha %v: give a level between 0 and 1, such as 0.05", o.alpha)
	}
	if !(o.minEffect > 0) {
		return fmt.Errorf("--min-effect %v: give a relative difference above 0, such as 0.25", o.minEffect)
	}
	if o.out != "" {
		if _, err := report.FormatOf(o.out, report.FormatSVG, report.FormatHTML); err != nil {
			return fmt.Errorf("-o %s: %w", o.out, err)
		}
	}
	return nil
}

// writeAllocbenchOutputs prints the report and writes the chart of -o.
func writeAllocbenchOutputs(e *env, rep *allocbench.Report, o *allocbenchOptions) error {
	doc := report.Allocbench{Report: rep}
	format, _ := report.ParseFormat(o.format) // checked by checkAllocbenchOutputs
	if err := report.Write(e.stdout, format, doc); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	if o.out == "" {
		return nil
	}
	out, _ := report.FormatOf(o.out, report.FormatSVG, report.FormatHTML)
	if err := atomicfile.Write(o.out, func(w io.Writer) error { return report.Write(w, out, doc) }); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "wrote %s\n", o.out)
	return nil
}
