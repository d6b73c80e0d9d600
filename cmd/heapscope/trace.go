package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/exectrace"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/run"
	"github.com/heapscope/heapscope/internal/target"
)

type traceOptions struct {
	source run.TraceSource
	out    string
	format string
	target targetFlags
}

func newTraceCmd(e *env) *cobra.Command {
	o := &traceOptions{}
	cmd := &cobra.Command{
		Use:   "trace TARGET|FILE",
		Short: "GC timeline from an execution trace: cycles, pauses, heap and goal",
		Long: `trace derives the GC timeline of a Go program from an execution trace:
each GC cycle's start and length, its two stop-the-world pauses (sweep
termination, mark termination), its mark phase, the heap (HeapAlloc) and
heap goal over time, other stop-the-world pauses (ReadMemStats, goroutine
profiles, …), time spent in mark assists, and the share of wall time during
which a GC cycle was under way and during which the world was stopped.

TARGET is a service's base URL: heapscope captures a trace of --duration
from its /debug/pprof/trace?seconds=N (tracing costs the service a few
percent of CPU while it runs). FILE is a saved trace (from runtime/trace,
go test -trace, or the pprof endpoint), or - for stdin. Traces of Go 1.11
and later are read; Go 1.22 and later carry the heap figures.

-o OUT.svg or OUT.html draws the chart: heap and goal over time, GC cycles
shaded, stop-the-world pauses marked beneath.`,
		Example: `  heapscope trace http://127.0.0.1:6060 --duration 5s -o gc.svg
  heapscope trace http://127.0.0.1:6060 --save trace.out --format json
  heapscope trace trace.out -o gc.html
  go test -run TestX -trace trace.out ./pkg && heapscope trace trace.out`,
		Args: exactArgs(1, "TARGET, a service's base URL, or FILE, a saved trace (- for stdin)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTrace(cmd, e, args[0], o)
		},
	}
	fs := cmd.Flags()
	fs.DurationVarP(&o.source.Duration, "duration", "d", 5*time.Second, "how long to trace TARGET (whole seconds, at least 1s)")
	fs.StringVarP(&o.out, "output", "o", "", "also draw the timeline: .svg or .html")
	fs.StringVar(&o.source.Save, "save", "", "keep the trace captured from TARGET in this file")
	fs.StringVar(&o.format, "format", "text", "output: text or json")
	o.target.register(fs, "TARGET", "timeout of the request beyond the trace's own duration", target.DefaultTimeout,
		"largest trace accepted from TARGET, in bytes")
	return cmd
}

func runTrace(cmd *cobra.Command, e *env, arg string, o *traceOptions) error {
	format, err := report.ParseFormat(o.format, report.FormatText, report.FormatJSON)
	if err != nil {
		return err
	}
	out, err := outputFormat("-o", o.out, report.FormatSVG, report.FormatHTML)
	if err != nil {
		return err
	}
	src := o.source
	src.Arg, src.Stdin, src.Target, src.Headers = arg, e.stdin, o.target.Options, o.target.headers
	prog := newStatus(e.stderr, false, 0)
	src.Capturing = func(host string) { fmt.Fprintf(e.stderr, "tracing %s for %ds\n", host, int(src.Duration/time.Second)) }
	src.Progress = func(p run.Progress) { prog.Show(p.String()) }
	src.Saved = func(path string) { prog.Finish(); fmt.Fprintf(e.stderr, "saved the trace to %s\n", path) }
	data, title, err := src.Read(cmd.Context())
	prog.Finish()
	if err != nil {
		return err
	}
	tl, err := exectrace.Read(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: %w", title, err)
	}
	doc := report.Trace{Timeline: tl, Title: title}
	if o.out != "" {
		if err := writeDocument(o.out, out, doc); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "wrote %s\n", o.out)
	}
	return report.Write(e.stdout, format, doc)
}
