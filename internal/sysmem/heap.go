package sysmem

import "fmt"

// ArenaSize is the size of a Go heap arena on 64-bit Linux: the runtime
// reserves address space for its heap in ArenaSize pieces aligned to
// ArenaSize.
const ArenaSize = 64 << 20

// HeapMappings describes the mappings that hold the Go heap, as found by
// GoHeap, and how they square with the runtime's HeapSys.
type HeapMappings struct {
	// Count is the number of read-write mappings that hold the heap.
	Count int
	// Size is their total size: heap memory the runtime has mapped
	// (HeapSys, goroutine stacks, which live in the same arenas, and
	// up to 4 MiB of growth not yet handed out).
	Size uint64
	// Rss is the resident part of Size.
	Rss uint64
	// PrivateDirty is the part of Rss the process has written.
	PrivateDirty uint64
	// Swap is the part of Size swapped out.
	Swap uint64
	// Reserved is the address space of the arenas, Size plus the
	// reserved but not yet mapped rest (PROT_NONE): a multiple of
	// ArenaSize.
	Reserved uint64
	// Arenas is Reserved / ArenaSize.
	Arenas int
	// HeapSys is the runtime's figure the mappings were checked against;
	// 0 when none was given.
	HeapSys uint64
	// Consistent reports whether the mappings agree with HeapSys: at
	// least HeapSys mapped (so at least HeapSys rounded up to ArenaSize
	// reserved). It is false when no heap was found or no HeapSys given.
	Consistent bool
	// Confidence, from 0 to 1, is how sure the identification is.
	Confidence float64
	// Note explains a doubt: why the mappings are not consistent, or why
	// they could not be checked.
	Note string
	// Mappings are the read-write heap mappings, in address order.
	Mappings []Mapping
}

// GoHeap picks the Go heap out of a process's mappings and checks its
// total against heapSys, the runtime's MemStats.HeapSys (0 if unknown).
//
// The runtime reserves its heap in whole arenas: ArenaSize pieces of
// anonymous, private address space at ArenaSize-aligned addresses, first
// PROT_NONE ("---p"), then made read-write ("rw-p") in 4 MiB steps as the
// heap grows. Since Go 1.26 the heap base is random and the first
// read-write range may begin anywhere in its arena, so the start of a
// read-write mapping says nothing; nor is its size a multiple of
// ArenaSize, and the kernel merges the ranges of neighbouring arenas. What
// holds is that the run of adjacent anonymous private mappings an arena
// belongs to begins and ends on ArenaSize boundaries. GoHeap takes every
// such run and counts its read-write mappings as the heap.
//
// Mappings the kernel marks "nr" (no swap reserved) are left out: the Go
// runtime never asks for that, but the C allocator's per-thread arenas
// (64 MiB-aligned too, in cgo programs) and the race detector's shadow
// memory do.
func GoHeap(maps []Mapping, heapSys uint64) HeapMappings {
	h := HeapMappings{HeapSys: heapSys}
	for i := 0; i < len(maps); {
		if !ArenaCandidate(&maps[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(maps) && ArenaCandidate(&maps[j]) && maps[j].Start == maps[j-1].End {
			j++
		}
		run := maps[i:j]
		i = j
		start, end := run[0].Start, run[len(run)-1].End
		if start%ArenaSize != 0 || end%ArenaSize != 0 {
			continue
		}
		var rw []Mapping
		for _, m := range run {
			if m.Perms == PermRead|PermWrite {
				rw = append(rw, m)
			}
		}
		if len(rw) == 0 {
			continue
		}
		h.Reserved += end - start
		for _, m := range rw {
			h.Count++
			h.Size += m.End - m.Start
			h.Rss += m.Rss
			h.PrivateDirty += m.PrivateDirty
			h.Swap += m.Swap
			h.Mappings = append(h.Mappings, m)
		}
	}
	h.Arenas = int(h.Reserved / ArenaSize)
	h.check()
	return h
}

// ArenaCandidate reports whether m could be part of a Go heap arena:
// anonymous, private, not flagged "nr" (see GoHeap), and either
// read-write or reserved (no access). GoHeap then keeps the runs of
// adjacent candidates that begin and end on ArenaSize boundaries; a
// caller that streams mappings (rss.Classifier) buffers the candidates
// only.
func ArenaCandidate(m *Mapping) bool {
	if !m.Anon() || m.Flags&FlagNoReserve != 0 {
		return false
	}
	return m.Perms == PermRead|PermWrite || m.Perms == 0
}

// check sets Consistent, Confidence and Note.
func (h *HeapMappings) check() {
	switch {
	case h.Count == 0:
		h.Confidence = 0
		h.Note = "no anonymous rw-p mappings in 64 MiB-aligned arenas: not a Go process, or not 64-bit Linux"
		return
	case h.HeapSys == 0:
		h.Confidence = 0.5
		h.Note = "not cross-checked: HeapSys unknown"
		return
	}
	// Reserved is whole arenas and at least Size, so Size >= HeapSys
	// also means at least HeapSys rounded up to arenas is reserved.
	switch {
	case h.Size < h.HeapSys:
		h.Confidence = 0.2
		h.Note = fmt.Sprintf("heap mappings total %d bytes, less than HeapSys %d: some heap mappings were not recognised, or the heap grew between reading MemStats and the mappings", h.Size, h.HeapSys)
	case h.Size-h.HeapSys > h.HeapSys+ArenaSize:
		// Goroutine stacks share the arenas, so the excess can be
		// real, but more than HeapSys again is suspicious.
		h.Consistent = true
		h.Confidence = 0.6
		h.Note = fmt.Sprintf("heap mappings total %d bytes, far above HeapSys %d: goroutine stacks (StackInuse) live in the same arenas, or mappings that are not the heap were counted", h.Size, h.HeapSys)
	default:
		h.Consistent = true
		h.Confidence = 0.9
	}
}
