package gcstats_test

import (
	"fmt"
	"time"

	"github.com/heapscope/heapscope/internal/gcstats"
)

func ExampleNewWindow() {
	// Two snapshots 10 s apart. The end one has 5 more cycles, one of them
	// forced by the heap?gc=1 fetch that took it.
	start := gcstats.MemStats{NumGC: 254, NumForcedGC: 1, TotalAlloc: 100 << 20, Mallocs: 1_000_000}
	end := gcstats.MemStats{NumGC: 259, NumForcedGC: 2, TotalAlloc: 600 << 20, Mallocs: 6_000_000, HeapInuse: 48 << 20}
	// Cycles 255 to 259 sit at ring indices 254, 255, 0, 1 and 2.
	for i, ns := range map[int]uint64{254: 120_000, 255: 80_000, 0: 95_000, 1: 2_000_000, 2: 110_000} {
		end.PauseNs[i] = ns
	}

	w := gcstats.NewWindow(start, end, 10*time.Second)
	fmt.Printf("cycles %d (%d forced), %.1f/s\n", w.Cycles, w.ForcedCycles, w.CyclesPerSecond)
	fmt.Printf("pauses over %d cycles: p50 %.0fµs, p99 %.0fµs, max %.0fµs, total %.3fms\n",
		w.PausesCovered, w.PauseP50Seconds*1e6, w.PauseP99Seconds*1e6, w.PauseMaxSeconds*1e6, w.PauseTotalSeconds*1e3)
	fmt.Printf("allocated %d MiB at %.0f MiB/s, %.0f objects/s\n", w.AllocBytes>>20, w.AllocBytesPerSecond/(1<<20), w.MallocsPerSecond)
	fmt.Printf("heap in use at end: %d MiB\n", w.HeapInuse>>20)
	// Output:
	// cycles 5 (1 forced), 0.4/s
	// pauses over 5 cycles: p50 110µs, p99 2000µs, max 2000µs, total 2.405ms
	// allocated 500 MiB at 50 MiB/s, 500000 objects/s
	// heap in use at end: 48 MiB
}

func ExampleWindowGCCPU() {
	// Lifetime fractions at uptimes 60 s and 120 s.
	share, ok := gcstats.WindowGCCPU(0.010, 0.025, 60*time.Second, 120*time.Second)
	fmt.Printf("%.3f %v\n", share, ok)
	_, ok = gcstats.WindowGCCPU(0.010, 0.025, 0, 120*time.Second)
	fmt.Println(ok)
	// Output:
	// 0.040 true
	// false
}
