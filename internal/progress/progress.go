// Package progress shows a long command's progress as one line on a
// writer, such as stderr: on a terminal, redrawn in place; elsewhere (a CI
// log), when the command asks for it, one line per update, or one per
// interval at most and the last one at the end. The caller says whether
// the writer is a terminal.
package progress

import (
	"fmt"
	"io"
	"time"
)

// Line is a progress line on a writer. Its methods are not safe for
// concurrent use; the progress callbacks of run, load, bench and
// allocbench never overlap.
type Line struct {
	w        io.Writer
	terminal bool
	on       bool
	every    time.Duration // off a terminal, the least time between lines
	last     time.Time
	drawn    bool
	pending  string // the last line, when not printed
	now      func() time.Time
}

// NewLine returns a progress line on w, a terminal or not. offTerminal
// says whether to print lines when w is not a terminal, and every how
// often at most.
func NewLine(w io.Writer, terminal, offTerminal bool, every time.Duration) *Line {
	return &Line{w: w, terminal: terminal, on: terminal || offTerminal, every: every, now: time.Now}
}

// Show shows s as the progress.
func (l *Line) Show(s string) {
	if !l.on {
		return
	}
	now := l.now()
	if !l.terminal && l.drawn && now.Sub(l.last) < l.every {
		l.pending = s
		return
	}
	l.last, l.drawn, l.pending = now, true, ""
	if l.terminal {
		fmt.Fprintf(l.w, "\r\033[K%s", s)
	} else {
		fmt.Fprintln(l.w, s)
	}
}

// Step shows step done of total, described by what: "[3/10] what".
func (l *Line) Step(done, total int, what string) {
	l.Show(fmt.Sprintf("[%d/%d] %s", done, total, what))
}

// Finish clears the terminal's line, or prints the last line when it was
// held back. Finishing again does nothing until the next Show.
func (l *Line) Finish() {
	switch {
	case l.terminal && l.drawn:
		fmt.Fprint(l.w, "\r\033[K")
	case !l.terminal && l.pending != "":
		fmt.Fprintln(l.w, l.pending)
	}
	l.drawn, l.pending = false, ""
}
