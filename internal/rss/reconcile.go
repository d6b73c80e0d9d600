package rss

import (
	"fmt"

	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/humanize"
)

// The reconciliation's one tolerance: two figures agree when they differ
// by at most ToleranceBytes or ToleranceShare of the larger, whichever
// allows more. MemStats and smaps are two reads, not one snapshot: the
// heap moves between them under load and the scavenger returns pages in
// the background; the runtime grows its heap in 4 MiB steps and a
// transparent huge page is 2 MiB; GC work buffers live in the arenas but
// count in GCSys. docs/rss.md gives the reasoning.
const (
	ToleranceBytes = 4 << 20
	ToleranceShare = 0.10
)

// Agree reports whether a and b are equal within the reconciliation's
// tolerance.
func Agree(a, b uint64) bool {
	d := max(a, b) - min(a, b)
	return d <= ToleranceBytes || float64(d) <= ToleranceShare*float64(max(a, b))
}

// notable reports whether part of whole is worth an explanation: taking
// it away leaves a figure that no longer agrees with whole.
func notable(part, whole uint64) bool {
	return part > 0 && !Agree(whole, sub(whole, part))
}

// Kernel is the kernel's view of a process's memory, from smaps (or only
// its total, from a remote target's metrics). Sizes are in bytes.
type Kernel struct {
	// RSSBytes is the process's resident memory.
	RSSBytes uint64
	// ByMapping says whether the figures below are known; false when only
	// RSSBytes is.
	ByMapping bool
	// HeapMappings counts the Go heap arenas' read-write mappings;
	// HeapSizeBytes, HeapRSSBytes and HeapSwapBytes sum them.
	HeapMappings  int
	HeapSizeBytes uint64
	HeapRSSBytes  uint64
	HeapSwapBytes uint64
	// AnonRSSBytes is anonymous memory resident outside the heap arenas:
	// other anonymous mappings and the main thread's [stack].
	AnonRSSBytes uint64
	// FileRSSBytes is resident in the executable, shared libraries and
	// other mapped files; FilePSSBytes is its proportional share, 0 when
	// unknown.
	FileRSSBytes uint64
	FilePSSBytes uint64
}

// Kernel returns the kernel's view of the classified process.
func (cl *Classification) Kernel() Kernel {
	h := cl.Kind(KindGoHeap)
	var files, filesPSS uint64
	for _, k := range []Kind{KindBinary, KindLibrary, KindFile} {
		files += cl.Kind(k).RSSBytes
		filesPSS += cl.Kind(k).PSSBytes
	}
	return Kernel{
		RSSBytes: cl.Total.RSSBytes, ByMapping: true,
		HeapMappings: h.Mappings, HeapSizeBytes: h.SizeBytes, HeapRSSBytes: h.RSSBytes, HeapSwapBytes: h.SwapBytes,
		AnonRSSBytes: cl.Kind(KindAnon).RSSBytes + cl.Kind(KindStack).RSSBytes,
		FileRSSBytes: files, FilePSSBytes: filesPSS,
	}
}

// Accounting is the runtime's view of its memory: the figures of
// runtime.MemStats that Reconcile reads, in bytes.
type Accounting struct {
	HeapSys      uint64
	HeapIdle     uint64
	HeapInuse    uint64
	HeapReleased uint64
	HeapAlloc    uint64
	StackInuse   uint64
	Sys          uint64
}

// AccountingOf returns the figures of ms that Reconcile reads.
func AccountingOf(ms *gcstats.MemStats) Accounting {
	return Accounting{
		HeapSys: ms.HeapSys, HeapIdle: ms.HeapIdle, HeapInuse: ms.HeapInuse,
		HeapReleased: ms.HeapReleased, HeapAlloc: ms.HeapAlloc,
		StackInuse: ms.StackInuse, Sys: ms.Sys,
	}
}

// Committed is Sys − HeapReleased: every byte the runtime has mapped and
// not given back (runtime/metrics' /memory/classes/total:bytes less
// /memory/classes/heap/released:bytes).
func (a *Accounting) Committed() uint64 { return sub(a.Sys, a.HeapReleased) }

// ArenaCommitted is HeapSys − HeapReleased + StackInuse: the part of
// Committed in the heap arenas, where goroutine stacks live too; at most
// this much of the arenas can be resident.
func (a *Accounting) ArenaCommitted() uint64 { return sub(a.HeapSys, a.HeapReleased) + a.StackInuse }

// OffArena is Sys − HeapSys − StackInuse: the rest of Committed, mapped
// outside the arenas. Sys being the sum of the XSys fields, it is the
// sum of the off-heap classes: StackSys − StackInuse (OS thread stacks),
// MSpanSys, MCacheSys, GCSys, BuckHashSys and OtherSys.
func (a *Accounting) OffArena() uint64 { return sub(a.Sys, a.HeapSys+a.StackInuse) }

// Reconciliation squares the kernel's view of a process's memory with the
// runtime's: the figures, and the explanation item by item. Sizes are in
// bytes; the runtime's figures are 0 when it was not known.
type Reconciliation struct {
	// CommittedBytes is Sys − HeapReleased: every byte the runtime has
	// mapped and not given back, in its heap arenas and outside them. At
	// most this much of the process's anonymous memory is the runtime's;
	// pages committed but never touched are not resident.
	CommittedBytes uint64 `json:"committed_bytes"`
	// ArenaCommittedBytes is HeapSys − HeapReleased + StackInuse: what
	// the runtime holds in its heap arenas, goroutine stacks included.
	ArenaCommittedBytes uint64 `json:"arena_committed_bytes"`
	// OffArenaBytes is Sys − HeapSys − StackInuse, the sum of the other
	// Sys classes (StackSys − StackInuse, MSpanSys, MCacheSys, GCSys,
	// BuckHashSys, OtherSys): what the runtime maps outside its arenas,
	// not all of it touched.
	OffArenaBytes uint64 `json:"off_arena_bytes"`
	// HeapGapBytes is the arenas' Rss less ArenaCommittedBytes: below 0,
	// committed pages are not resident (never touched, or swapped out);
	// above, pages are resident that the runtime released.
	HeapGapBytes int64 `json:"heap_gap_bytes"`
	// UnknownAnonBytes is the anonymous memory resident outside the
	// arenas beyond OffArenaBytes: memory the runtime does not know of.
	UnknownAnonBytes uint64 `json:"unknown_anon_bytes"`
	// IdleBytes is HeapIdle − HeapReleased: free heap the runtime keeps
	// rather than returning it to the OS.
	IdleBytes uint64 `json:"idle_bytes"`
	// FragmentedBytes is HeapInuse − HeapAlloc: free space inside spans
	// in use, an upper bound on fragmentation.
	FragmentedBytes uint64 `json:"fragmented_bytes"`
	// Items explain the figures one by one; the first is about the heap
	// arenas (or, without a per-mapping view, the whole process).
	Items []Explanation `json:"items"`
}

// Explanation is one item of the reconciliation, with the bytes it is
// about.
type Explanation struct {
	// ID names the item. About the heap arenas: "heap-matches",
	// "heap-untouched", "heap-released-resident", or "heap-resident"
	// without the runtime's figures. About the whole process, when only
	// its RSS is known: "total-matches", "total-below-committed",
	// "total-above-committed". Then "heap-idle" and "heap-fragmented"
	// when they are notable, "unknown-anon" or "runtime-off-heap", and
	// "files".
	ID    string `json:"id"`
	Bytes uint64 `json:"bytes"`
	Text  string `json:"text"`
}

// Cause returns the ID of the first item, the one that explains the heap
// arenas (or the whole process), or "" when there is none.
func (r *Reconciliation) Cause() string {
	if len(r.Items) == 0 {
		return ""
	}
	return r.Items[0].ID
}

// Reconcile squares k with a, the runtime's figures (nil when unknown).
// It never adds MemStats up to RSS: the runtime counts what it has
// committed, the kernel what is resident, and each item says why the two
// differ where they do. It is pure.
func Reconcile(k Kernel, a *Accounting) Reconciliation {
	var r Reconciliation
	if a != nil {
		r.CommittedBytes = a.Committed()
		r.ArenaCommittedBytes = a.ArenaCommitted()
		r.OffArenaBytes = a.OffArena()
		r.IdleBytes = sub(a.HeapIdle, a.HeapReleased)
		r.FragmentedBytes = sub(a.HeapInuse, a.HeapAlloc)
		if k.ByMapping {
			r.HeapGapBytes = int64(k.HeapRSSBytes) - int64(r.ArenaCommittedBytes)
			r.UnknownAnonBytes = sub(k.AnonRSSBytes, r.OffArenaBytes)
		}
	}
	b := humanize.Bytes
	add := func(id string, bytes uint64, format string, args ...any) {
		r.Items = append(r.Items, Explanation{ID: id, Bytes: bytes, Text: fmt.Sprintf(format, args...)})
	}
	f := func(v uint64) string { return b(float64(v)) }

	switch {
	case !k.ByMapping && a == nil:
		return r
	case !k.ByMapping:
		r.total(k, add, f)
	case k.HeapMappings == 0:
		add("heap-resident", 0, "no Go heap arenas found among the mappings: not a Go process, or not 64-bit Linux")
	case a == nil:
		share := 0.0
		if k.HeapSizeBytes > 0 {
			share = float64(k.HeapRSSBytes) / float64(k.HeapSizeBytes)
		}
		add("heap-resident", k.HeapRSSBytes,
			"the Go heap arenas have %s resident of %s mapped (%s); what the runtime holds there is unknown without its MemStats",
			f(k.HeapRSSBytes), f(k.HeapSizeBytes), humanize.Percent(share))
	case Agree(k.HeapRSSBytes, r.ArenaCommittedBytes):
		add("heap-matches", k.HeapRSSBytes,
			"the Go heap arenas have %s resident and the runtime holds %s there (HeapSys − HeapReleased + StackInuse): within %s of each other, so nearly every page the runtime keeps has been touched",
			f(k.HeapRSSBytes), f(r.ArenaCommittedBytes), f(max(k.HeapRSSBytes, r.ArenaCommittedBytes)-min(k.HeapRSSBytes, r.ArenaCommittedBytes)))
	case k.HeapRSSBytes < r.ArenaCommittedBytes:
		d := r.ArenaCommittedBytes - k.HeapRSSBytes
		text := fmt.Sprintf(
			"committed but untouched: the runtime holds %s in its heap arenas (HeapSys − HeapReleased + StackInuse) but only %s is resident; %s was mapped and never written since the OS handed it over (fresh spans, a big allocation not yet filled), so the kernel does not count it",
			f(r.ArenaCommittedBytes), f(k.HeapRSSBytes), f(d))
		if k.HeapSwapBytes > 0 {
			text += fmt.Sprintf(", or is swapped out (%s of the arenas is in swap)", f(k.HeapSwapBytes))
		}
		add("heap-untouched", d, "%s", text)
	default:
		d := k.HeapRSSBytes - r.ArenaCommittedBytes
		add("heap-released-resident", d,
			"released but resident: %s is resident in the heap arenas beyond the %s the runtime holds there; pages it released (HeapReleased = %s) stay resident under GODEBUG=madvdontneed=0 (MADV_FREE, until memory is short) or inside transparent huge pages, or the heap changed between reading MemStats and smaps",
			f(d), f(r.ArenaCommittedBytes), f(a.HeapReleased))
	}

	if a != nil {
		if notable(r.IdleBytes, r.ArenaCommittedBytes) {
			add("heap-idle", r.IdleBytes,
				"%s of heap is idle and not yet returned to the OS (HeapIdle − HeapReleased): the runtime keeps it to grow the heap again and the scavenger returns it over minutes; GOMEMLIMIT makes it return sooner, debug.FreeOSMemory at once",
				f(r.IdleBytes))
		}
		if notable(r.FragmentedBytes, r.ArenaCommittedBytes) {
			add("heap-fragmented", r.FragmentedBytes,
				"%s is free inside in-use spans (HeapInuse − HeapAlloc): space dedicated to size classes and not in use, at most fragmentation, from many objects of a size class freed unevenly",
				f(r.FragmentedBytes))
		}
	}
	if !k.ByMapping {
		return r
	}

	switch anon := k.AnonRSSBytes; {
	case a != nil && anon > r.OffArenaBytes && !Agree(anon, r.OffArenaBytes):
		add("unknown-anon", r.UnknownAnonBytes,
			"memory the runtime does not know: %s of anonymous memory outside the heap arenas is resident, %s more than all the runtime maps outside them (Sys − HeapSys − StackInuse = %s); cgo and C libraries (malloc), direct mmap (syscall.Mmap) and C threads' stacks are not in MemStats",
			f(anon), f(r.UnknownAnonBytes), f(r.OffArenaBytes))
	case a != nil:
		add("runtime-off-heap", anon,
			"%s of anonymous memory outside the heap arenas is resident, within the %s the runtime maps outside them (span and GC metadata, profiling buckets, OS thread stacks): nothing the runtime does not know of",
			f(anon), f(r.OffArenaBytes))
	case anon > 0:
		add("runtime-off-heap", anon,
			"%s of anonymous memory outside the heap arenas is resident: the runtime's off-heap metadata, thread stacks, and anything cgo or direct mmap allocated",
			f(anon))
	}
	if files := k.FileRSSBytes; files > 0 {
		text := fmt.Sprintf("%s is resident in the executable, shared libraries and mapped files: page cache, counted in RSS and never in MemStats.Sys", f(files))
		if pss := k.FilePSSBytes; pss > 0 && pss < files {
			text += fmt.Sprintf("; shared with other processes, its proportional share is %s", f(pss))
		}
		add("files", files, "%s", text)
	}
	return r
}

// total explains the whole process's RSS against what the runtime has
// committed, when the kernel's view has no mappings.
func (r *Reconciliation) total(k Kernel, add func(string, uint64, string, ...any), f func(uint64) string) {
	switch {
	case Agree(k.RSSBytes, r.CommittedBytes):
		add("total-matches", k.RSSBytes,
			"RSS %s and the %s the runtime has committed (Sys − HeapReleased) agree; how much of RSS is the executable and libraries needs the per-mapping view of a process on this machine",
			f(k.RSSBytes), f(r.CommittedBytes))
	case k.RSSBytes < r.CommittedBytes:
		add("total-below-committed", r.CommittedBytes-k.RSSBytes,
			"RSS %s is %s below the %s the runtime has committed (Sys − HeapReleased): pages committed but never touched (or swapped out) count in MemStats and not in RSS",
			f(k.RSSBytes), f(r.CommittedBytes-k.RSSBytes), f(r.CommittedBytes))
	default:
		add("total-above-committed", k.RSSBytes-r.CommittedBytes,
			"RSS %s is %s above the %s the runtime has committed (Sys − HeapReleased): the executable and libraries (page cache), memory the runtime does not know of (cgo, mmap) or released pages still resident; the per-mapping view of a process on this machine tells which",
			f(k.RSSBytes), f(k.RSSBytes-r.CommittedBytes), f(r.CommittedBytes))
	}
}

// sub is a - b, or 0 when b > a.
func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}
