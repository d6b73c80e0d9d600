package diagnose

import (
	"io"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
)

// Input is everything the checks look at. Every field is optional: a check
// whose inputs are missing says so in a note and finds nothing.
type Input struct {
	// Run is the run's summary: window, MemStats figures, load, RSS,
	// the target's Go version, modules and environment. Diagnosing bare
	// profiles leaves it nil.
	Run *result.Run
	// Heap holds heap profiles of one process, oldest first; three or
	// more enable the leak check.
	Heap []Profile
	// Live is the exact live heap with each of Heap (MemStats HeapAlloc
	// and HeapObjects read right after the snapshot's forced GC), when
	// known for every one: it decides whether the heap grows, and the
	// profiles say where.
	Live []Live
	// FirstUnderLoad is the index in Heap of the first snapshot taken
	// under the load the window drives, when the window opened on a
	// service not yet under it: growth before it is the service meeting
	// the load (pools, caches, connections filling), and only the
	// snapshots from it on tell a leak. 0 when every snapshot was taken
	// under the same conditions.
	FirstUnderLoad int
	// Allocs is the window's allocation profile (alloc_* of the last heap
	// snapshot minus the first). When nil, it is derived from the first
	// and last of Heap.
	Allocs *profile.Profile
	// CPU is a CPU profile over the window.
	CPU *profile.Profile
	// Goroutines holds goroutine profiles of one process, oldest first.
	Goroutines []Profile
	// Contention holds block and mutex profiles.
	Contention []Profile
	// MemStats is the runtime's accounting at the window's end, when
	// known: the RSS check uses its classes.
	MemStats *gcstats.MemStats
	// Source reads source lines, when the service's source is readable.
	Source SourceReader
	// Escapes gives the compiler's escape-analysis explanations of a
	// line, when the service's source was built with -gcflags=-m=2.
	Escapes Escapes
	// Thresholds, when nil, are DefaultThresholds().
	Thresholds *Thresholds
	// All keeps the hot spots too small to matter, which Run otherwise
	// counts in Report.HiddenHotSpots.
	All bool

	// heap is Heap read by stack (LoadHeap).
	heap *heapSeries
}

// Live is the live heap after a forced GC, exactly.
type Live struct {
	Bytes, Objects uint64
	// Profiling is true when the profiler held buffers in the process
	// then (a CPU profile running): the leak check takes out the step in
	// the series where that changes.
	Profiling bool
}

// Profile is one profile with its name (a file or a profile kind, for
// messages) and when it was taken: parsed, or, for a heap snapshot in
// the middle of a series, only aggregated by stack.
type Profile struct {
	Name    string
	Time    time.Time
	Profile *profile.Profile
	// Open, when set, opens the profile's bytes (gzipped or not), and
	// Profile may then be nil: a heap snapshot is read from it by stack,
	// with the rest of its series, and parsed whole only where the checks
	// need it (see Input.LoadHeap). Time may then be zero: the profile's
	// own timestamp orders the series.
	Open func() (io.ReadCloser, error)
}

// SourceReader returns one line of a source file as named in a profile,
// and whether it could be read.
type SourceReader interface {
	Line(file string, line int64) (string, bool)
}

// Escapes is the compiler's escape analysis of the service: the
// explanations for one source line.
type Escapes interface {
	At(file string, line int) []string
}

// Report is what Run found.
type Report struct {
	// Findings, most severe first.
	Findings []result.Finding
	// Notes say what could not be checked and why, and doubts about the
	// input (snapshots that cannot come from one process).
	Notes []string
	// HiddenHotSpots counts the allocation hot spots left out as too
	// small to matter (Input.All keeps them).
	HiddenHotSpots int
}

// frame is one source line of a stack.
type frame struct {
	function, file string
	line           int64
}

// site is where a finding points.
type site struct {
	function, file string
	line           int64
}

func (f frame) site() site { return site{f.function, f.file, f.line} }

// frames returns the source lines of a sample's stack, innermost first,
// inlined calls expanded.
func frames(s *profile.Sample) []frame {
	out := make([]frame, 0, len(s.Location)+2)
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			f := frame{line: ln.Line}
			if ln.Function != nil {
				f.function, f.file = ln.Function.Name, ln.Function.Filename
			}
			out = append(out, f)
		}
	}
	return out
}

// isStd reports whether a function belongs to the standard library (or
// the runtime): its import path has no dot in its first element. Package
// main is the service's own.
func isStd(function string) bool {
	pkg := pprofx.PackagePath(function)
	if pkg == "main" || function == "" {
		return false
	}
	first, _, _ := strings.Cut(pkg, "/")
	return !strings.Contains(first, ".")
}

// isRuntime reports whether a function is part of the runtime's machinery
// (allocation, scheduling, locks) rather than a caller's code.
func isRuntime(function string) bool {
	pkg := pprofx.PackagePath(function)
	return pkg == "runtime" || strings.HasPrefix(pkg, "runtime/internal") || strings.HasPrefix(pkg, "internal/runtime") ||
		pkg == "sync" || pkg == "internal/sync" || pkg == "sync/atomic"
}

// appCode says which frames are the service's own code: those of its main
// module when it is known, else those outside the standard library.
type appCode struct{ mainModule string }

func (a appCode) is(function string) bool {
	if function == "" {
		return false
	}
	if a.mainModule != "" && a.mainModule != "command-line-arguments" {
		pkg := pprofx.PackagePath(function)
		return pkg == a.mainModule || strings.HasPrefix(pkg, a.mainModule+"/") || pkg == "main"
	}
	return !isStd(function)
}

// firstApp returns the innermost frame of the service's own code. Without
// the main module (bare profiles), a frame whose file is in the module
// cache is a dependency's, whatever its package.
func (a appCode) firstApp(fs []frame) (frame, bool) {
	if i := slices.IndexFunc(fs, a.own); i >= 0 {
		return fs[i], true
	}
	return frame{}, false
}

// lastApp returns the outermost frame of the service's own code among fs
// (innermost first).
func (a appCode) lastApp(fs []frame) (frame, bool) {
	for i := len(fs) - 1; i >= 0; i-- {
		if a.own(fs[i]) {
			return fs[i], true
		}
	}
	return frame{}, false
}

// own reports whether a frame is the service's own code (is), and for a
// bare profile without a main module, not in the module cache.
func (a appCode) own(f frame) bool {
	return a.is(f.function) && (a.mainModule != "" || !inDependency(f.file))
}
