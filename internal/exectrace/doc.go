// Package exectrace derives the GC timeline of a Go program from its
// execution trace (runtime/trace, or /debug/pprof/trace?seconds=N), read
// with golang.org/x/exp/trace: the picture "go tool trace" draws, as
// numbers and a chart.
//
// The pipeline:
//
//  1. Read walks the trace's events once: the "GC concurrent mark phase"
//     ranges delimit the mark phases, the "stop-the-world (…)" ranges the
//     pauses (those for "GC sweep termination" and "GC mark termination"
//     belong to a cycle; others, such as ReadMemStats or a goroutine
//     profile, do not), the "GC mark assist" ranges the time goroutines
//     spent assisting, and the metric events the heap (HeapAlloc) and the
//     heap goal over time.
//  2. A cycle runs from the start of its sweep-termination pause to the
//     end of its mark-termination pause; a cycle under way when the trace
//     started or still running when it ended is kept, marked partial, and
//     clipped to the trace.
//  3. Summarise (on Read's result) gives the shares of wall time in GC and
//     in stop-the-world pauses, pause percentiles and heap extremes.
//  4. Result gives the timeline as result.json carries it (result.Trace),
//     its series downsampled; report renders it (report.Trace).
//
// Times are offsets from the trace's first event. The package is pure: it
// takes an io.Reader and returns values. The trace reader is a library
// that may panic on malformed input; Read turns a panic into an error.
package exectrace
