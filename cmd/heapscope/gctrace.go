package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/gcrun"
	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/report"
)

// gctraceOptions are the flags of gctrace.
type gctraceOptions struct {
	format     string
	plot       string
	plotFormat report.Format
}

func newGCTraceCmd(e *env) *cobra.Command {
	o := &gctraceOptions{}
	cmd := &cobra.Command{
		Use:   "gctrace [LOG|-] | gctrace [flags] -- COMMAND [ARGS...]",
		Short: "GC figures from GODEBUG=gctrace=1 output, or of a command run with it",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGCTrace(cmd.Context(), e, args, cmd.ArgsLenAtDash(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.format, "format", "text", "output: text or json")
	fs.StringVar(&o.plot, "plot", "", "also draw the heap over time into OUT.svg or OUT.html")
	return withHelp(cmd, "gctrace")
}

func runGCTrace(ctx context.Context, e *env, args []string, dash int, o *gctraceOptions) error {
	format, err := report.ParseFormat(o.format, report.FormatText, report.FormatJSON)
	if err != nil {
		return err
	}
	if o.plotFormat, err = report.OutputFormat("--plot", o.plot, report.FormatSVG, report.FormatHTML); err != nil {
		return err
	}
	if dash >= 0 {
		if dash > 0 {
			return fmt.Errorf("gctrace takes a LOG or -- COMMAND, not both (got %q before --)", args[:dash])
		}
		if len(args) == 0 {
			return errors.New("gctrace --: give the command to run after --")
		}
		return gctraceCommand(ctx, e, args, format, o)
	}
	if len(args) > 1 {
		return fmt.Errorf("gctrace takes one LOG (got %d arguments); to run a command, put it after --", len(args))
	}
	path, name := "-", "stdin"
	if len(args) == 1 && args[0] != "-" {
		path, name = args[0], args[0]
	}
	r, err := e.open(path)
	if err != nil {
		return fmt.Errorf("gctrace: %w", err)
	}
	defer r.Close()
	t, err := gcstats.ParseTrace(r)
	if err != nil {
		return fmt.Errorf("gctrace %s: %w", name, err)
	}
	return gctraceReport(e, t, format, o)
}

// gctraceReport writes the summary, and the plot when asked.
func gctraceReport(e *env, t gcstats.Trace, format report.Format, o *gctraceOptions) error {
	s := gcstats.Summarize(t)
	doc := report.GCTrace{Summary: &s}
	if o.plot != "" {
		if err := report.WriteFile(o.plot, o.plotFormat, doc); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "wrote %s\n", o.plot)
	}
	return report.Write(e.stdout, format, doc)
}

// gctraceStopDelay is how long an interrupted command has to exit before
// it is killed.
var gctraceStopDelay = gcrun.DefaultStopDelay

// gctraceCommand runs argv with gctrace on, analysing its stderr as it
// comes; the command's exit code is heapscope's.
func gctraceCommand(ctx context.Context, e *env, argv []string, format report.Format, o *gctraceOptions) error {
	res, err := gcrun.Run(ctx, argv, gcrun.Options{Stdin: e.stdin, Stdout: e.stdout, Stderr: e.stderr, StopDelay: gctraceStopDelay})
	if err != nil {
		return fmt.Errorf("gctrace: %w", err)
	}
	if len(res.Trace.Cycles) > 0 {
		if err := gctraceReport(e, res.Trace, format, o); err != nil {
			return err
		}
	}
	err = res.Err(argv[0], ctx.Err() != nil)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return &codeError{code: exitInterrupted, err: fmt.Errorf("gctrace: %w", err)}
	case res.ExitCode != 0:
		return &codeError{code: res.ExitCode, err: fmt.Errorf("gctrace: %w", err)}
	}
	return fmt.Errorf("gctrace: %w", err)
}
