package gcstats

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Window is what two MemStats snapshots of one process say about the time
// between them. Counts and rates are deltas over the window; the heap
// figures are the end snapshot's.
type Window struct {
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// Comparable is false when the end snapshot cannot follow the start
	// one in the same process (a counter went backwards: the target
	// restarted, or the snapshots are swapped); Reason says why, and the
	// deltas, rates and pause figures are then zero.
	Comparable bool   `json:"comparable"`
	Reason     string `json:"reason,omitempty"`

	// Cycles is the number of GC cycles completed in the window, of which
	// ForcedCycles were forced by runtime.GC — including the ones a
	// heap?gc=1 fetch triggers.
	Cycles       uint32 `json:"cycles"`
	ForcedCycles uint32 `json:"forced_cycles"`
	// CyclesPerSecond counts only the cycles the runtime started on its
	// own (Cycles - ForcedCycles): that rate is the service's GC pressure,
	// while forced cycles are whatever the caller of runtime.GC, often the
	// profiler itself, asked for.
	CyclesPerSecond float64 `json:"cycles_per_second"`

	// PausesCovered is how many of the window's cycles the pause figures
	// cover: all of them, up to the PauseRingSize the runtime keeps. When
	// RingOverflowed, the figures cover the last PauseRingSize cycles of
	// the window only.
	PausesCovered  int  `json:"pauses_covered"`
	RingOverflowed bool `json:"ring_overflowed"`
	// The pause figures are over the covered cycles' stop-the-world pause
	// times, forced cycles included. Percentiles are nearest-rank: the
	// smallest pause p% of the covered pauses are at or below.
	PauseP50Seconds   float64 `json:"pause_p50_seconds"`
	PauseP99Seconds   float64 `json:"pause_p99_seconds"`
	PauseMaxSeconds   float64 `json:"pause_max_seconds"`
	PauseTotalSeconds float64 `json:"pause_total_seconds"`

	// AllocBytes and Mallocs are the bytes and objects allocated in the
	// window (TotalAlloc and Mallocs deltas). Rates are zero when the
	// elapsed time is not positive.
	AllocBytes          uint64  `json:"alloc_bytes"`
	AllocBytesPerSecond float64 `json:"alloc_bytes_per_second"`
	Mallocs             uint64  `json:"mallocs"`
	MallocsPerSecond    float64 `json:"mallocs_per_second"`

	// Heap figures at the end of the window.
	HeapAlloc    uint64 `json:"heap_alloc"`
	HeapInuse    uint64 `json:"heap_inuse"`
	HeapIdle     uint64 `json:"heap_idle"`
	HeapReleased uint64 `json:"heap_released"`
	HeapSys      uint64 `json:"heap_sys"`
	HeapObjects  uint64 `json:"heap_objects"`
	Sys          uint64 `json:"sys"`
	NextGC       uint64 `json:"next_gc"`
}

// NewWindow compares two MemStats snapshots of one process taken elapsed
// apart. Cycle n (counting from 1) has its pause at PauseNs[(n-1)%256], so
// the window's cycles are read from end's ring at end.NumGC-1, going
// backwards, for min(Cycles, 256) entries.
func NewWindow(start, end MemStats, elapsed time.Duration) Window {
	w := Window{
		ElapsedSeconds: elapsed.Seconds(),
		HeapAlloc:      end.HeapAlloc,
		HeapInuse:      end.HeapInuse,
		HeapIdle:       end.HeapIdle,
		HeapReleased:   end.HeapReleased,
		HeapSys:        end.HeapSys,
		HeapObjects:    end.HeapObjects,
		Sys:            end.Sys,
		NextGC:         end.NextGC,
	}
	if reason := incomparable(start, end); reason != "" {
		w.Reason = reason
		return w
	}
	w.Comparable = true
	w.Cycles = end.NumGC - start.NumGC
	w.ForcedCycles = end.NumForcedGC - start.NumForcedGC
	w.AllocBytes = end.TotalAlloc - start.TotalAlloc
	w.Mallocs = end.Mallocs - start.Mallocs
	if secs := elapsed.Seconds(); secs > 0 {
		w.CyclesPerSecond = float64(w.Cycles-w.ForcedCycles) / secs
		w.AllocBytesPerSecond = float64(w.AllocBytes) / secs
		w.MallocsPerSecond = float64(w.Mallocs) / secs
	}

	w.PausesCovered = int(min(w.Cycles, PauseRingSize))
	w.RingOverflowed = w.Cycles > PauseRingSize
	var pauses [PauseRingSize]uint64
	covered := pauses[:w.PausesCovered]
	var total uint64
	for k := range covered {
		covered[k] = end.PauseNs[(end.NumGC-1-uint32(k))%PauseRingSize]
		total += covered[k]
	}
	if len(covered) > 0 {
		slices.Sort(covered)
		w.PauseP50Seconds = nsToSeconds(nearestRank(covered, 50))
		w.PauseP99Seconds = nsToSeconds(nearestRank(covered, 99))
		w.PauseMaxSeconds = nsToSeconds(covered[len(covered)-1])
		w.PauseTotalSeconds = nsToSeconds(total)
	}
	return w
}

// incomparable says why end cannot be a later snapshot of start's process,
// or "" when it can.
func incomparable(start, end MemStats) string {
	const restart = "the snapshots are not of one process in order (did the target restart?)"
	switch {
	case end.NumGC < start.NumGC:
		return fmt.Sprintf("NumGC fell from %d to %d: %s", start.NumGC, end.NumGC, restart)
	case end.NumForcedGC < start.NumForcedGC:
		return fmt.Sprintf("NumForcedGC fell from %d to %d: %s", start.NumForcedGC, end.NumForcedGC, restart)
	case end.NumForcedGC-start.NumForcedGC > end.NumGC-start.NumGC:
		return fmt.Sprintf("more forced GC cycles (%d) than GC cycles (%d): %s", end.NumForcedGC-start.NumForcedGC, end.NumGC-start.NumGC, restart)
	case end.TotalAlloc < start.TotalAlloc:
		return fmt.Sprintf("TotalAlloc fell from %d to %d: %s", start.TotalAlloc, end.TotalAlloc, restart)
	case end.Mallocs < start.Mallocs:
		return fmt.Sprintf("Mallocs fell from %d to %d: %s", start.Mallocs, end.Mallocs, restart)
	}
	return ""
}

// nearestRank returns the p-th percentile (0 < p ≤ 100) of the sorted,
// non-empty values by the nearest-rank method: the value at rank
// ceil(p/100 × n), counting from 1.
func nearestRank(sorted []uint64, p int) uint64 {
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}

func nsToSeconds(ns uint64) float64 {
	return float64(ns) / 1e9
}

// WindowGCCPU returns the share of CPU the GC used during a window, from
// the GCCPUFraction of two snapshots and the process's uptime at each.
// GCCPUFraction is a lifetime figure (since process start), so the
// window's share is
//
//	(endFrac×endUptime − startFrac×startUptime) / (endUptime − startUptime)
//
// clamped to [0, 1]. ok is false, and the share meaningless, when either
// uptime is unknown (0 or less) or the uptimes do not increase.
func WindowGCCPU(startFrac, endFrac float64, startUptime, endUptime time.Duration) (share float64, ok bool) {
	if startUptime <= 0 || endUptime <= startUptime {
		return 0, false
	}
	if !finite(startFrac) || !finite(endFrac) {
		return 0, false
	}
	s, e := startUptime.Seconds(), endUptime.Seconds()
	share = (endFrac*e - startFrac*s) / (e - s)
	return min(max(share, 0), 1), true
}

func finite(f float64) bool {
	return !math.IsNaN(f) && !math.IsInf(f, 0)
}
