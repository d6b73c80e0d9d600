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
		Long: `gctrace reads the lines a Go program prints on stderr under
GODEBUG=gctrace=1 (and scavtrace=1), of any Go release from 1.19 on, its
own output mixed in, and reports: the GC count and cycles per second, the
stop-the-world pauses (sweep termination + mark termination, wall clock)
and GC CPU time per cycle as percentiles, the runtime's GC CPU share, and
the heap at each cycle's start and end, its live part and goal, over time.
--plot draws that heap over time with a mark per GC as SVG, or as an HTML
page (the SVG inline, no external requests) when OUT ends in .html.

LOG is a file, or - (the default) for stdin.

With -- COMMAND, gctrace runs the command with gctrace=1 appended to its
GODEBUG, passes its stdin and stdout through, reads its stderr as it comes
(forwarding every line that is not the runtime's GC trace to stderr), and
reports when the command exits. If the command fails, the report is still
printed and heapscope exits with the command's exit code (128+N when a
signal N ended it), so it can wrap a test run in CI.

Exit codes: 0 success; 2 unreadable input or a log without GC lines; the
command's own code when it failed; 130 interrupted.`,
		Example: `  GODEBUG=gctrace=1 ./myservice 2> gc.log; heapscope gctrace gc.log
  heapscope gctrace gc.log --format json
  heapscope gctrace gc.log --plot heap.html
  heapscope gctrace --plot heap.svg -- go test -run TestBig ./pkg/...
  GODEBUG=gctrace=1 ./batchjob 2>&1 >/dev/null | heapscope gctrace -`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGCTrace(cmd.Context(), e, args, cmd.ArgsLenAtDash(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.format, "format", "text", "output: text or json")
	fs.StringVar(&o.plot, "plot", "", "also draw the heap over time into OUT.svg or OUT.html")
	return cmd
}

func runGCTrace(ctx context.Context, e *env, args []string, dash int, o *gctraceOptions) error {
	format, err := report.ParseFormat(o.format, report.FormatText, report.FormatJSON)
	if err != nil {
		return err
	}
	if o.plotFormat, err = outputFormat("--plot", o.plot, report.FormatSVG, report.FormatHTML); err != nil {
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
		if err := writeDocument(o.plot, o.plotFormat, doc); err != nil {
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
