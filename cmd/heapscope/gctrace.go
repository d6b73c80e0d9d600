package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/report"
)

// gctraceOptions are the flags of gctrace.
type gctraceOptions struct {
	format string
	plot   string
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
	if o.plot != "" {
		if _, err := report.FormatOf(o.plot, report.FormatSVG, report.FormatHTML); err != nil {
			return fmt.Errorf("--plot %s: %w", o.plot, err)
		}
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
	path := "-"
	if len(args) == 1 {
		path = args[0]
	}
	var r io.Reader = e.stdin
	name := "stdin"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("gctrace: %w", err)
		}
		defer f.Close()
		r, name = f, path
	}
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
		plot, _ := report.FormatOf(o.plot, report.FormatSVG, report.FormatHTML) // checked by runGCTrace
		var buf bytes.Buffer
		if err := report.Write(&buf, plot, doc); err != nil {
			return fmt.Errorf("draw %s: %w", o.plot, err)
		}
		if err := writeAtomic(o.plot, func(w io.Writer) error {
			_, err := w.Write(buf.Bytes())
			return err
		}); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "wrote %s\n", o.plot)
	}
	return report.Write(e.stdout, format, doc)
}

// gctraceStopDelay is how long an interrupted command has to exit before
// it is killed.
var gctraceStopDelay = 5 * time.Second

// gctraceCommand runs argv with gctrace on, analysing its stderr as it
// comes.
func gctraceCommand(ctx context.Context, e *env, argv []string, format report.Format, o *gctraceOptions) error {
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Env = withGODEBUG(os.Environ(), "gctrace=1")
	c.Stdin, c.Stdout = e.stdin, e.stdout
	// Interrupted: ask the command to stop as Ctrl-C would, then kill it.
	c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
	c.WaitDelay = gctraceStopDelay
	stderr, err := c.StderrPipe()
	if err != nil {
		return fmt.Errorf("gctrace: run %s: %w", argv[0], err)
	}
	if err := c.Start(); err != nil {
		return fmt.Errorf("gctrace: run %s: %w", argv[0], err)
	}
	var p gcstats.TraceParser
	readErr := forwardTrace(stderr, e.stderr, &p)
	waitErr := c.Wait()
	t := p.Trace()

	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(waitErr, &ee):
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	case waitErr != nil && ctx.Err() != nil && errors.Is(waitErr, ctx.Err()):
		// Interrupted, the command exited 0 (as a service shutting down
		// gracefully does): exec reports the interrupt, not a failure,
		// and the cycles seen so far are still reported.
	case waitErr != nil:
		return fmt.Errorf("gctrace: run %s: %w", argv[0], waitErr)
	}
	if readErr != nil {
		return fmt.Errorf("gctrace: read the stderr of %s: %w", argv[0], readErr)
	}
	if len(t.Cycles) == 0 {
		if ctx.Err() != nil {
			return &codeError{code: exitInterrupted, err: fmt.Errorf("gctrace: interrupted before %s printed a GC line", argv[0])}
		}
		if code != 0 {
			return &codeError{code: code, err: fmt.Errorf("gctrace: %s exited with status %d before any GC cycle", argv[0], code)}
		}
		return fmt.Errorf("gctrace: %s printed %w", argv[0], gcstats.ErrNoCycles)
	}
	if err := gctraceReport(e, t, format, o); err != nil {
		return err
	}
	switch {
	case ctx.Err() != nil:
		return &codeError{code: exitInterrupted, err: fmt.Errorf("gctrace: interrupted; the report covers %s until then", argv[0])}
	case code != 0:
		return &codeError{code: code, err: fmt.Errorf("gctrace: %s exited with status %d", argv[0], code)}
	}
	return nil
}

// forwardTrace feeds every line of r to p and copies those that are not
// the runtime's GC trace to w.
func forwardTrace(r io.Reader, w io.Writer, p *gcstats.TraceParser) error {
	br := bufio.NewReaderSize(r, 64<<10)
	long := false // inside a line longer than the buffer
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if long || errors.Is(err, bufio.ErrBufferFull) {
				// Not the runtime's: pass it through in pieces.
				long = errors.Is(err, bufio.ErrBufferFull)
				w.Write(line)
			} else if kind := p.Line(line); kind == gcstats.LineOther || kind == gcstats.LineMalformed {
				w.Write(line)
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case err == io.EOF, errors.Is(err, os.ErrClosed):
			return nil
		default:
			return err
		}
	}
}

// withGODEBUG returns env with setting appended to GODEBUG, unless GODEBUG
// already sets its key.
func withGODEBUG(env []string, setting string) []string {
	key, _, _ := strings.Cut(setting, "=")
	out := make([]string, 0, len(env)+1)
	val := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			val = v
			continue
		}
		out = append(out, kv)
	}
	for s := range strings.SplitSeq(val, ",") {
		if k, _, _ := strings.Cut(s, "="); k == key {
			return append(out, "GODEBUG="+val)
		}
	}
	if val != "" {
		val += ","
	}
	return append(out, "GODEBUG="+val+setting)
}
