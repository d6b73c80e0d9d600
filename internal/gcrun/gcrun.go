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
	"path/filepath"
	"slices"
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
	// TestBinaries is true when the command was go test, whose test
	// binaries alone were traced: not the go command, the compiler or
	// the linker.
	TestBinaries bool
}

// Err says what the caller's last word on the command named name is, nil
// when it exited 0 after printing GC cycles: interrupted (when
// interrupted), exited with a status, or printed no GC cycle.
func (r Result) Err(name string, interrupted bool) error {
	cycles := len(r.Trace.Cycles) > 0
	switch {
	case interrupted && !cycles:
		return fmt.Errorf("interrupted before %s printed a GC line", name)
	case interrupted:
		return fmt.Errorf("interrupted; the report covers %s until then", name)
	case r.ExitCode != 0 && !cycles:
		return fmt.Errorf("%s exited with status %d before any GC cycle", name, r.ExitCode)
	case r.ExitCode != 0:
		return fmt.Errorf("%s exited with status %d", name, r.ExitCode)
	case cycles:
		return nil
	case r.TestBinaries:
		return errors.New("the test binaries of go test ran no GC cycle (the go command's, the compiler's and the linker's own are left out)")
	}
	return fmt.Errorf("%s printed %w", name, gcstats.ErrNoCycles)
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
	env := WithGODEBUG(os.Environ(), "gctrace=1")
	traceDir := ""
	if isGoTest(argv) {
		// The go command, the compiler and the linker are Go programs
		// too, and go test keeps a passing test's output to itself:
		// trace the test binaries alone, through go test's -exec, each
		// writing its stderr to a file of its own.
		dir, err := os.MkdirTemp("", "heapscope-gctrace-")
		if err != nil {
			return Result{}, fmt.Errorf("run %s: %w", argv[0], err)
		}
		defer os.RemoveAll(dir)
		traceDir = dir
		godebug := env[len(env)-1]
		env = append(os.Environ(), "HEAPSCOPE_"+godebug, "HEAPSCOPE_GCTRACE_DIR="+dir)
		at := 2 // after "go test", and after -C DIR, which must come first
		if len(argv) > 3 && (argv[2] == "-C" || argv[2] == "--C") {
			at = 4
		} else if len(argv) > 2 && (strings.HasPrefix(argv[2], "-C=") || strings.HasPrefix(argv[2], "--C=")) {
			at = 3
		}
		argv = slices.Concat(argv[:at:at], []string{"-exec", goTestExec}, argv[at:])
	}
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Env = env
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
	if traceDir != "" && readErr == nil {
		readErr = forwardFiles(traceDir, forward, &p)
	}
	res := Result{Trace: p.Trace(), TestBinaries: traceDir != ""}

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
		return Result{}, fmt.Errorf("read the GC trace of %s: %w", argv[0], readErr)
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

// goTestExec is the -exec of a traced go test: it runs each test binary
// with the GODEBUG the trace needs and its stderr, where the runtime
// prints the trace, appended to a file named by its process id.
const goTestExec = `sh -c 'GODEBUG="$HEAPSCOPE_GODEBUG" exec "$0" "$@" 2>>"$HEAPSCOPE_GCTRACE_DIR/$$"'`

// isGoTest reports whether argv runs go test without an -exec of its own.
func isGoTest(argv []string) bool {
	if len(argv) < 2 || filepath.Base(argv[0]) != "go" || argv[1] != "test" {
		return false
	}
	for _, a := range argv[2:] {
		if a == "-exec" || a == "--exec" || strings.HasPrefix(a, "-exec=") || strings.HasPrefix(a, "--exec=") {
			return false
		}
	}
	return true
}

// forwardFiles forwards the test binaries' stderr files of dir, one
// process after another.
func forwardFiles(dir string, w io.Writer, p *gcstats.TraceParser) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		err = Forward(f, w, p)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
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
