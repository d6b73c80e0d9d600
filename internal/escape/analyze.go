package escape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Analyze runs the compiler's escape analysis over the packages of the Go
// module in dir (patterns default to "./...") and returns its heap
// verdicts. Notes about files outside dir (standard library generics
// instantiated in the module, say) are dropped. The go command's build
// cache keeps the compiler's output, so analysing an unchanged module again
// is quick.
func Analyze(ctx context.Context, dir string, patterns ...string) (*Report, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("escape analysis of %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(abs, "go.mod")); err != nil {
		return nil, fmt.Errorf("escape analysis of %s: not a Go module root (no go.mod): use --source with the directory that holds go.mod", dir)
	}
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	args := append([]string{"build", "-gcflags=-m=2", "-o", os.DevNull}, patterns...)
	if len(patterns) > 1 || strings.Contains(patterns[0], "...") {
		// go build refuses -o with several main packages; without -o it
		// builds and discards them.
		args = append([]string{"build", "-gcflags=-m=2"}, patterns...)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = abs
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("escape analysis of %s: %w", dir, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("escape analysis of %s: start go build: %w", dir, err)
	}
	// The compiler's notes go to stderr, mixed with build errors; keep the
	// lines that are neither notes nor package headers to explain a failure.
	errs := &errorLines{}
	rep, parseErr := Parse(io.TeeReader(stderr, errs))
	waitErr := cmd.Wait()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("escape analysis of %s: %w", dir, ctx.Err())
	}
	if waitErr != nil {
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) && errs.first != "" {
			return nil, fmt.Errorf("escape analysis of %s: go build: %s", dir, errs.first)
		}
		return nil, fmt.Errorf("escape analysis of %s: go build: %w", dir, waitErr)
	}
	if parseErr != nil {
		return nil, fmt.Errorf("escape analysis of %s: %w", dir, parseErr)
	}
	rep.keepInside(abs)
	return rep, nil
}

// keepInside drops notes about files outside root and makes the others
// relative to it.
func (r *Report) keepInside(root string) {
	root = filepath.ToSlash(root)
	for k, notes := range r.notes {
		kept := notes[:0]
		for _, n := range notes {
			if strings.HasPrefix(n.File, "/") {
				rel, ok := strings.CutPrefix(n.File, root+"/")
				if !ok {
					continue
				}
				n.File = rel
			}
			if strings.HasPrefix(n.File, "../") {
				continue
			}
			kept = append(kept, n)
		}
		r.count -= len(notes) - len(kept)
		if len(kept) == 0 {
			delete(r.notes, k)
		} else {
			r.notes[k] = kept
		}
	}
}

// errorLines remembers the first line of the go command's stderr that is
// not a compiler note: on a failed build, that is the error to show.
type errorLines struct {
	partial []byte
	first   string
}

func (e *errorLines) Write(p []byte) (int, error) {
	if e.first != "" {
		return len(p), nil
	}
	e.partial = append(e.partial, p...)
	for {
		i := bytes.IndexByte(e.partial, '\n')
		if i < 0 {
			break
		}
		line := string(e.partial[:i])
		e.partial = e.partial[i+1:]
		if isBuildError(line) {
			e.first = line
			e.partial = nil
			break
		}
	}
	return len(p), nil
}

// isBuildError tells a build error from the compiler's notes and the go
// command's package headers ("# pkg").
func isBuildError(line string) bool {
	if line == "" || strings.HasPrefix(line, "#") {
		return false
	}
	if _, _, _, text, ok := splitPosition(line); ok {
		// Notes and errors share the position prefix; errors are what the
		// optimiser never says.
		return !isNote(text)
	}
	return true
}

// isNote reports whether a positioned message is one of -m=2's notes.
func isNote(text string) bool {
	if strings.HasPrefix(text, " ") {
		return true
	}
	for _, s := range []string{"inline", "escape", "heap", "leak", "capturing", "devirtualiz", "stack", "zero-copy", "does not", "parameter", "flow", "from ", "moved", "make(", "new("} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}
