// Package gcstats holds GC figures: the runtime.MemStats trailer of a heap
// profile in text form (/debug/pprof/heap?debug=1) and what two such
// snapshots say about the window between them — GC cycles and their rate,
// pause percentiles from the 256-entry pause ring, allocation rates, and a
// window's share of GC CPU.
//
// Everything here is pure: readers and values in, values out.
package gcstats
