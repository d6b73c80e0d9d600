// Package rss explains a process's resident memory: where the kernel finds
// it, mapping kind by mapping kind, and how it squares with what the Go
// runtime believes it holds.
//
// It is the pure core of "heapscope rss". The steps:
//
//  1. A Classifier is fed the mappings of /proc/PID/smaps one at a time
//     (sysmem.ScanSmaps streams them); it sorts each into a Kind — the Go
//     heap arenas, the main thread's [stack], other anonymous memory,
//     reserved address space, the executable, shared libraries, other
//     files — and sums Size, Rss, Pss, Private_Dirty and Swap per kind,
//     keeping only the few mappings that may be Go heap arenas, which
//     sysmem.GoHeap then identifies. Memory stays flat however many
//     mappings a process has.
//  2. Build puts the classification beside the cgroup's limit and usage
//     and, when known, the runtime's MemStats, and explains the gap
//     between the two views with Reconcile.
//
// Reconcile is heapscope's one reconciliation of RSS with the runtime's
// accounting: heapscope rss (through Build) and diagnose's rss.breakdown
// finding (over a run's recorded figures) both call it, so a process gets
// the same figures and the same explanation from either. It compares the
// heap arenas' Rss with HeapSys − HeapReleased + StackInuse, the
// anonymous memory outside them with Sys − HeapSys − StackInuse, within
// one tolerance (Agree), and names the cause: heap pages committed but
// never touched, pages released but still resident, idle heap not yet
// returned, fragmentation, memory the runtime does not know of (cgo, C
// libraries, direct mmap), page cache. docs/rss.md explains the formula.
//
// MemStats and RSS are never added up: MemStats count what the runtime
// has mapped and not released, the kernel counts pages that are
// resident, and the report reconciles the two.
//
// The package reads nothing: package live gathers its Input from a live
// process (/proc and the process's pprof).
package rss
