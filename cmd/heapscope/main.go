// Command heapscope finds where a Go service's memory goes: it drives load,
// collects pprof profiles, GC figures and RSS in one run, and reports the
// heaviest allocation sites, heap growth, GC cost and per-request figures.
//
// Run "heapscope help" for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// Exit codes, as every command documents them.
const (
	exitOK          = 0
	exitGateFailed  = 1
	exitUsage       = 2
	exitPartial     = 3
	exitInterrupted = 130
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first Ctrl-C stops the command in order (a run keeps what it
	// collected); after it, the default behaviour comes back, so a second
	// one ends heapscope at once.
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is what commands see of the process: their streams. Tests fill it
// with buffers.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// execute runs one heapscope command line and returns its exit code.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(e)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	// Flag and argument errors from cobra, and input errors, unless the
	// error says otherwise.
	code := exitUsage
	var ce *codeError
	switch {
	case errors.As(err, &ce):
		code, err = ce.code, ce.err
	case ctx.Err() != nil:
		code, err = exitInterrupted, fmt.Errorf("interrupted: %w", err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "heapscope: %s\n", flagText(cmd, err))
	}
	return code
}

// codeError carries an exit code other than exitUsage. A nil err means the
// command has already said what happened.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *codeError) Unwrap() error { return e.err }

func newRootCmd(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "heapscope",
		Short:         "Find where a Go service's memory goes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newProfileCmd(e),
		newDemoCmd(e),
		newLoadCmd(e),
		newTopCmd(e),
		newFlameCmd(e),
		newViewCmd(e),
		newVersionCmd(e),
		newServeExampleCmd(e),
		newBenchCmd(e),
		newAllocbenchCmd(e),
		newTraceCmd(e),
		newCompareCmd(e),
		newDiagnoseCmd(e),
		newRSSCmd(e),
		newGCTraceCmd(e),
		newWatchCmd(e),
		newHistoryCmd(e),
		newServerCmd(e),
		newStoreCmd(e),
	)
	return withHelp(root, "heapscope")
}
