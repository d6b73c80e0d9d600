// Package gcrun runs a command with the Go runtime's GC trace on
// (GODEBUG=gctrace=1) and reads the trace from the command's stderr as it
// comes, passing everything else through. gcstats parses the lines; this
// package is the process around them.
package gcrun

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/heapscope/heapscope/internal/gcstats"
)

// DefaultStopDelay is how long an interrupted command has to exit before
// it is killed.
const DefaultStopDelay = 5 * time.Second

// Options are the command's streams and how it is stopped.
type Options struct {
	// Stdin and Stdout are the command's own; Stderr gets every line of
	// its stderr that is not the runtime's GC trace.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// StopDelay is how long the command has to exit after an interrupt
	// (os.Interrupt, as Ctrl-C sends) before it is killed; 0 means
	// DefaultStopDelay.
	StopDelay time.Duration
}

// Result is what a command left.
type Result struct {
	// Trace holds the GC cycles the command printed.
	Trace gcstats.Trace
	// ExitCode is the command's exit status, 128+N when signal N ended it.
	ExitCode int
}

// Run runs argv with gctrace=1 added to its GODEBUG (unless GODEBUG sets
// gctrace already) until it exits. When ctx is cancelled the command gets
// an interrupt, then is killed after Options.StopDelay; the cycles seen
// until then are still returned. A command that fails is not an error:
// its exit code is in the Result.
func Run(ctx context.Context, argv []string, o Options) (Result, error) {
	if len(argv) == 0 {
		return Result{}, errors.New("run: no command")
	}
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Env = WithGODEBUG(os.Environ(), "gctrace=1")
	c.Stdin, c.Stdout = o.Stdin, o.Stdout
	// Interrupted: ask the command to stop as Ctrl-C would, then kill it.
	c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
	c.WaitDelay = o.StopDelay
	if c.WaitDelay <= 0 {
		c.WaitDelay = DefaultStopDelay
	}
	stderr, err := c.StderrPipe()
	if err != nil {
		return Result{}, fmt.Errorf("run %s: %w", argv[0], err)
	}
	if err := c.Start(); err != nil {
		return Result{}, fmt.Errorf("run %s: %w", argv[0], err)
	}
	var p gcstats.TraceParser
	forward := o.Stderr
	if forward == nil {
		forward = io.Discard
	}
	readErr := Forward(stderr, forward, &p)
	waitErr := c.Wait()
	res := Result{Trace: p.Trace()}

	var ee *exec.ExitError
	switch {
	case errors.As(waitErr, &ee):
		res.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode = 128 + int(ws.Signal())
		}
	case waitErr != nil && ctx.Err() != nil && errors.Is(waitErr, ctx.Err()):
		// Interrupted, the command exited 0 (as a service shutting down
		// gracefully does): exec reports the interrupt, not a failure,
		// and the cycles seen so far are still reported.
	case waitErr != nil:
		return Result{}, fmt.Errorf("run %s: %w", argv[0], waitErr)
	}
	if readErr != nil {
		return Result{}, fmt.Errorf("read the stderr of %s: %w", argv[0], readErr)
	}
	return res, nil
}

// Forward feeds every line of r to p and copies those that are not the
// runtime's GC trace to w, as they come. Lines longer than its 64 KiB
// buffer are not the runtime's: they pass through in pieces.
func Forward(r io.Reader, w io.Writer, p *gcstats.TraceParser) error {
	br := bufio.NewReaderSize(r, 64<<10)
	long := false // inside a line longer than the buffer
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if long || errors.Is(err, bufio.ErrBufferFull) {
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

// WithGODEBUG returns env with setting (such as "gctrace=1") appended to
// GODEBUG, unless GODEBUG already sets its key.
func WithGODEBUG(env []string, setting string) []string {
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
