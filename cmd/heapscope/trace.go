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
	"github.com/heapscope/heapscope/internal/units"
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
		Args:  exactArgs(1, "TARGET, a service's base URL, or FILE, a saved trace (- for stdin)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTrace(cmd, e, args[0], o)
		},
	}
	fs := cmd.Flags()
	fs.VarP(units.NewDuration(&o.source.Duration, 5*time.Second), "duration", "d", "how long to trace TARGET (whole seconds, at least 1s)")
	fs.StringVarP(&o.out, "output", "o", "", "also draw the timeline: .svg or .html")
	fs.StringVar(&o.source.Save, "save", "", "keep the trace captured from TARGET in this file")
	fs.StringVar(&o.format, "format", "text", "output: text or json")
	o.target.register(fs, "TARGET", "timeout of the request beyond the trace's own duration", target.DefaultTimeout,
		"largest trace accepted from TARGET, in bytes")
	return withHelp(cmd, "trace")
}

func runTrace(cmd *cobra.Command, e *env, arg string, o *traceOptions) error {
	format, err := report.ParseFormat(o.format, report.FormatText, report.FormatJSON)
	if err != nil {
		return err
	}
	out, err := report.OutputFormat("-o", o.out, report.FormatSVG, report.FormatHTML)
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
		if err := report.WriteFile(o.out, out, doc); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "wrote %s\n", o.out)
	}
	return report.Write(e.stdout, format, doc)
}
