package trigger

import (
	"errors"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/gcstats"
)

func TestSample_Merge(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	local := Sample{
		Time: at, Known: KnownPID | KnownRSS | KnownMemory | KnownCgroupUsage | KnownOOMKills,
		PID: 42, RSS: 100, Memory: 90, CgroupUsage: 120, Cgroup: "/sys/fs/cgroup/memory/app", OOMKills: 1,
		Warnings: []error{errors.New("local")},
	}
	remote := Sample{
		Time: at.Add(time.Second), Known: KnownRSS | KnownMemory | KnownGoroutines | KnownGoMemLimit,
		RSS: 999, Memory: 999, Goroutines: 7, GoMemLimit: 1 << 30,
		Warnings: []error{errors.New("remote")},
	}
	local.Merge(remote)
	want := Sample{
		Time: at, Known: KnownPID | KnownRSS | KnownMemory | KnownCgroupUsage | KnownOOMKills | KnownGoroutines | KnownGoMemLimit,
		PID: 42, RSS: 100, Memory: 90, CgroupUsage: 120, Cgroup: "/sys/fs/cgroup/memory/app", OOMKills: 1,
		Goroutines: 7, GoMemLimit: 1 << 30, Warnings: make([]error, 2),
	}
	if !sameSample(local, want) {
		t.Errorf("Merge\n got %+v\nwant %+v", local, want)
	}

	// Every field travels with its bit.
	var empty Sample
	full := Sample{
		Known: ^Known(0), PID: 1, Start: at, RSS: 2, Memory: 3, MemoryLimit: 4, CgroupUsage: 5, Cgroup: "c",
		OOMKills: 6, GoMemLimit: 7, GoMemory: 8, HeapAfterGC: 9, Goroutines: 10, GCCPUFraction: 0.5, LastGC: at,
	}
	empty.Merge(full)
	if !sameSample(empty, full) {
		t.Errorf("Merge into an empty sample\n got %+v\nwant %+v", empty, full)
	}
}

func TestSample_AddMemStats(t *testing.T) {
	lastGC := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	m := gcstats.MemStats{Sys: 300 << 20, HeapReleased: 100 << 20, HeapAlloc: 50 << 20, NumGC: 12,
		GCCPUFraction: 0.03, LastGC: uint64(lastGC.UnixNano())}
	var s Sample
	s.AddMemStats(m, true)
	want := Sample{Known: KnownGoMemory | KnownGCCPU | KnownHeapAfterGC, GoMemory: 200 << 20, HeapAfterGC: 50 << 20,
		GCCPUFraction: 0.03, LastGC: lastGC}
	if !sameSample(s, want) {
		t.Errorf("AddMemStats after GC\n got %+v\nwant %+v", s, want)
	}

	// Not after a forced GC, and before any GC: only the runtime's count.
	s = Sample{}
	s.AddMemStats(gcstats.MemStats{Sys: 10 << 20, HeapReleased: 1 << 20, HeapAlloc: 5 << 20}, false)
	want = Sample{Known: KnownGoMemory, GoMemory: 9 << 20}
	if !sameSample(s, want) {
		t.Errorf("AddMemStats before any GC\n got %+v\nwant %+v", s, want)
	}
}
