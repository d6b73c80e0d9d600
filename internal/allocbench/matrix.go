package allocbench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/heapscope/heapscope/internal/option"
)

// Progress is where a matrix run stands.
type Progress struct {
	// Done and Total count steps: a toolchain to prepare or a run.
	Done, Total int
	// Step says what is being done.
	Step string
}

// MatrixOptions configures Lab.RunMatrix.
type MatrixOptions struct {
	// Toolchains are the names to build with, in order.
	Toolchains []string
	// Patterns are the patterns to run.
	Patterns []Pattern
	// Count is how many times each cell runs; 1 when 0.
	Count int
	// Progress, when set, is called before every step and at the end.
	Progress func(Progress)
}

// MatrixRun is what Lab.RunMatrix collected.
type MatrixRun struct {
	// Toolchains are the toolchains built, with their versions.
	Toolchains []Toolchain
	// Samples are the runs that succeeded.
	Samples []Sample
	// Failures are the runs that did not, one error each.
	Failures []error
}

// RunMatrix builds the child program with every toolchain, then runs
// every pattern under every toolchain Count times. Repetitions come in
// rounds (every pattern under every toolchain, then again), so that a
// slow moment of the machine spreads over all cells instead of one.
//
// A toolchain that cannot be prepared ends the run with its error. A run
// that fails is recorded in Failures and the matrix goes on. When ctx is
// cancelled, RunMatrix returns what it collected with ctx's error.
func (l *Lab) RunMatrix(ctx context.Context, o MatrixOptions) (*MatrixRun, error) {
	count := o.Count
	if count <= 0 {
		count = 1
	}
	total := len(o.Toolchains) + count*len(o.Patterns)*len(o.Toolchains)
	done := 0
	report := func(step string) {
		if o.Progress != nil {
			o.Progress(Progress{Done: done, Total: total, Step: step})
		}
	}
	m := &MatrixRun{}
	builds := make([]*Build, len(o.Toolchains))
	for i, tc := range o.Toolchains {
		report("preparing " + tc)
		b, err := l.Prepare(ctx, tc)
		if err != nil {
			return m, err
		}
		builds[i] = b
		m.Toolchains = append(m.Toolchains, Toolchain{Name: tc, GoVersion: b.GoVersion})
		done++
	}
	for round := 0; round < count; round++ {
		for _, p := range o.Patterns {
			for _, b := range builds {
				report(fmt.Sprintf("%s %s %d/%d", p.Name(), b.GoVersion, round+1, count))
				s, err := b.Run(ctx, p)
				if ctx.Err() != nil {
					return m, ctx.Err()
				}
				if err != nil {
					m.Failures = append(m.Failures, err)
				} else {
					m.Samples = append(m.Samples, s)
				}
				done++
			}
		}
	}
	report("done")
	return m, nil
}

// RunOptions configure Run.
type RunOptions struct {
	MatrixOptions
	// Live is how many bytes a pattern keeps live; DefaultLive when 0.
	Live int
	// Timeout bounds one child run; one minute when 0.
	Timeout time.Duration
	// Analysis tunes Analyse.
	Analysis Options
}

// Validate reports the first option that cannot run as an
// *option.Error, those of Analysis from within it (option.Within). Run
// fills the defaults of zero fields before it validates; Validate takes
// the options as they are, so a zero Count or Live, which a command line
// gives only when its user typed 0, is an error here.
func (o RunOptions) Validate() error {
	if err := o.Analysis.Validate(); err != nil {
		return option.Within("Analysis", err)
	}
	switch {
	case o.Count < 1:
		return option.Errorf("Count", "{Count} %d: give a number ≥ 1", o.Count)
	case o.Live < minLive || o.Live > maxLive:
		return option.Errorf("Live", "{Live} %d: give a number of MiB from %d to %d", o.Live>>20, minLive>>20, maxLive>>20)
	}
	return nil
}

// Bounds of RunOptions.Live.
const (
	minLive = 8 << 20
	maxLive = 4096 << 20
)

// Err says how many runs failed, and the first failure; nil when none did.
func (m *MatrixRun) Err() error {
	if len(m.Failures) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d runs failed; the first: %w", len(m.Failures), len(m.Failures)+len(m.Samples), m.Failures[0])
}

// Run runs the matrix in a lab of its own, in a temporary directory
// removed after, and analyses what it collected: every failed run is
// also a warning of the report. When ctx is cancelled, Run analyses the
// runs made and returns ctx's error beside the report; any other error
// (a toolchain that cannot be prepared) comes alone.
func Run(ctx context.Context, o RunOptions) (*Report, *MatrixRun, error) {
	o.Count, o.Live, o.Analysis = cmp.Or(o.Count, 1), cmp.Or(o.Live, DefaultLive), o.Analysis.withDefaults()
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "heapscope-allocbench-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	lab := &Lab{Dir: dir, Live: o.Live, Timeout: o.Timeout}
	m, runErr := lab.RunMatrix(ctx, o.MatrixOptions)
	if runErr != nil && ctx.Err() == nil {
		return nil, nil, runErr
	}
	rep, err := Analyse(m.Samples, o.Patterns, m.Toolchains, o.Live, o.Analysis)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range m.Failures {
		rep.Warnings = append(rep.Warnings, f.Error())
	}
	return rep, m, runErr
}
