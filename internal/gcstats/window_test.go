package gcstats

import (
	"math"
	"strings"
	"testing"
	"time"
)

// snapshot returns MemStats after numGC cycles, with pause(n) nanoseconds
// recorded for each of the last 256 cycles n (counting from 1).
func snapshot(numGC, forced uint32, pause func(n uint32) uint64) MemStats {
	m := MemStats{NumGC: numGC, NumForcedGC: forced, TotalAlloc: uint64(numGC) << 20, Mallocs: uint64(numGC) * 1000}
	for n := numGC; n > 0 && numGC-n < PauseRingSize; n-- {
		m.PauseNs[(n-1)%PauseRingSize] = pause(n)
	}
	return m
}

// micro makes cycle n pause n microseconds.
func micro(n uint32) uint64 { return uint64(n) * 1000 }

func TestNewWindow_pauses(t *testing.T) {
	const us = 1e-6
	sumMicro := func(from, to int) float64 { return float64((from+to)*(to-from+1)/2) * us }
	tests := []struct {
		name       string
		start, end MemStats
		cycles     uint32
		covered    int
		overflow   bool
		p50, p99   float64
		max, total float64
	}{
		{
			name:  "no cycles",
			start: snapshot(40, 0, micro), end: snapshot(40, 0, micro),
		},
		{
			name:  "one cycle",
			start: snapshot(40, 0, micro), end: snapshot(41, 0, micro),
			cycles: 1, covered: 1, p50: 41 * us, p99: 41 * us, max: 41 * us, total: 41 * us,
		},
		{
			name:  "two cycles",
			start: snapshot(40, 0, micro), end: snapshot(42, 0, micro),
			cycles: 2, covered: 2, p50: 41 * us, p99: 42 * us, max: 42 * us, total: 83 * us,
		},
		{
			name:  "100 cycles from process start",
			start: MemStats{}, end: snapshot(100, 0, micro),
			cycles: 100, covered: 100, p50: 50 * us, p99: 99 * us, max: 100 * us, total: sumMicro(1, 100),
		},
		{
			name:  "fewer than 256 cycles, ring already wrapped",
			start: snapshot(1000, 0, micro), end: snapshot(1200, 0, micro),
			cycles: 200, covered: 200, p50: 1100 * us, p99: 1198 * us, max: 1200 * us, total: sumMicro(1001, 1200),
		},
		{
			name:  "exactly 256 cycles",
			start: snapshot(44, 0, micro), end: snapshot(300, 0, micro),
			cycles: 256, covered: 256, p50: 172 * us, p99: 298 * us, max: 300 * us, total: sumMicro(45, 300),
		},
		{
			name:  "300 cycles overflow the ring",
			start: MemStats{}, end: snapshot(300, 0, micro),
			cycles: 300, covered: 256, overflow: true, p50: 172 * us, p99: 298 * us, max: 300 * us, total: sumMicro(45, 300),
		},
		{
			// Cycles 251..260 sit at ring indices 250..255 and 0..3.
			name:  "window across the ring's wrap position",
			start: snapshot(250, 0, micro), end: snapshot(260, 0, micro),
			cycles: 10, covered: 10, p50: 255 * us, p99: 260 * us, max: 260 * us, total: sumMicro(251, 260),
		},
		{
			name:  "window ending at the wrap position",
			start: snapshot(250, 0, micro), end: snapshot(256, 0, micro),
			cycles: 6, covered: 6, p50: 253 * us, p99: 256 * us, max: 256 * us, total: sumMicro(251, 256),
		},
		{
			name:  "unsorted pauses",
			start: snapshot(10, 0, micro),
			end: snapshot(15, 0, func(n uint32) uint64 {
				return map[uint32]uint64{11: 9000, 12: 1000, 13: 5000, 14: 3000, 15: 7000}[n]
			}),
			cycles: 5, covered: 5, p50: 5 * us, p99: 9 * us, max: 9 * us, total: 25 * us,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Entries outside the window must not be read: poison them.
			end := tt.end
			for k := tt.covered; k < PauseRingSize; k++ {
				end.PauseNs[(end.NumGC-1-uint32(k))%PauseRingSize] = math.MaxUint32
			}
			w := NewWindow(tt.start, end, 10*time.Second)
			if !w.Comparable {
				t.Fatalf("not comparable: %s", w.Reason)
			}
			if w.Cycles != tt.cycles || w.PausesCovered != tt.covered || w.RingOverflowed != tt.overflow {
				t.Errorf("cycles %d, covered %d, overflowed %v; want %d, %d, %v", w.Cycles, w.PausesCovered, w.RingOverflowed, tt.cycles, tt.covered, tt.overflow)
			}
			for _, c := range []struct {
				name      string
				got, want float64
			}{
				{"p50", w.PauseP50Seconds, tt.p50},
				{"p99", w.PauseP99Seconds, tt.p99},
				{"max", w.PauseMaxSeconds, tt.max},
				{"total", w.PauseTotalSeconds, tt.total},
			} {
				if math.Abs(c.got-c.want) > 1e-12 {
					t.Errorf("pause %s = %v s, want %v s", c.name, c.got, c.want)
				}
			}
		})
	}
}

func TestNewWindow_rates(t *testing.T) {
	start := MemStats{NumGC: 10, NumForcedGC: 1, TotalAlloc: 1 << 30, Mallocs: 5000}
	end := MemStats{
		NumGC: 32, NumForcedGC: 3, TotalAlloc: 1<<30 + 400<<20, Mallocs: 85000,
		HeapAlloc: 11, HeapInuse: 12, HeapIdle: 13, HeapReleased: 14, HeapSys: 15, HeapObjects: 16, Sys: 17, NextGC: 18,
	}
	tests := []struct {
		name    string
		elapsed time.Duration
		want    Window
	}{
		{name: "four seconds", elapsed: 4 * time.Second, want: Window{
			ElapsedSeconds: 4, Comparable: true,
			Cycles: 22, ForcedCycles: 2, CyclesPerSecond: 5,
			AllocBytes: 400 << 20, AllocBytesPerSecond: 100 << 20, Mallocs: 80000, MallocsPerSecond: 20000,
		}},
		{name: "no elapsed time", elapsed: 0, want: Window{
			Comparable: true, Cycles: 22, ForcedCycles: 2, AllocBytes: 400 << 20, Mallocs: 80000,
		}},
		{name: "negative elapsed time", elapsed: -time.Second, want: Window{
			ElapsedSeconds: -1, Comparable: true, Cycles: 22, ForcedCycles: 2, AllocBytes: 400 << 20, Mallocs: 80000,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWindow(start, end, tt.elapsed)
			want := tt.want
			want.PausesCovered = 22
			want.HeapAlloc, want.HeapInuse, want.HeapIdle, want.HeapReleased = 11, 12, 13, 14
			want.HeapSys, want.HeapObjects, want.Sys, want.NextGC = 15, 16, 17, 18
			if w != want {
				t.Errorf("NewWindow =\n%+v\nwant\n%+v", w, want)
			}
		})
	}
}

func TestNewWindow_notComparable(t *testing.T) {
	base := MemStats{NumGC: 100, NumForcedGC: 4, TotalAlloc: 1 << 30, Mallocs: 1e6, HeapAlloc: 77}
	tests := []struct {
		name   string
		modify func(end *MemStats)
		reason string
	}{
		{name: "NumGC fell", modify: func(m *MemStats) { m.NumGC = 3 }, reason: "NumGC fell from 100 to 3"},
		{name: "NumForcedGC fell", modify: func(m *MemStats) { m.NumGC = 120; m.NumForcedGC = 1 }, reason: "NumForcedGC fell from 4 to 1"},
		{name: "more forced than cycles", modify: func(m *MemStats) { m.NumGC = 101; m.NumForcedGC = 7 }, reason: "more forced GC cycles (3) than GC cycles (1)"},
		{name: "TotalAlloc fell", modify: func(m *MemStats) { m.NumGC = 120; m.TotalAlloc = 5 }, reason: "TotalAlloc fell from 1073741824 to 5"},
		{name: "Mallocs fell", modify: func(m *MemStats) { m.NumGC = 120; m.Mallocs = 5 }, reason: "Mallocs fell from 1000000 to 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			end := base
			end.TotalAlloc += 1 << 20
			end.Mallocs += 10
			tt.modify(&end)
			w := NewWindow(base, end, time.Second)
			if w.Comparable {
				t.Fatal("comparable, want not")
			}
			if !strings.HasPrefix(w.Reason, tt.reason) || !strings.Contains(w.Reason, "restart") {
				t.Errorf("reason %q, want it to start with %q and mention a restart", w.Reason, tt.reason)
			}
			want := Window{ElapsedSeconds: 1, Reason: w.Reason, HeapAlloc: 77}
			if w != want {
				t.Errorf("NewWindow = %+v, want only elapsed, reason and end heap figures", w)
			}
		})
	}
}

func TestWindowGCCPU(t *testing.T) {
	tests := []struct {
		name                string
		startFrac, endFrac  float64
		startUptime, endUpt time.Duration
		want                float64
		ok                  bool
	}{
		// 10 s at 1% is 0.1 s of GC; 20 s at 3% is 0.6 s: 0.5 s over 10 s.
		{name: "rising", startFrac: 0.01, endFrac: 0.03, startUptime: 10 * time.Second, endUpt: 20 * time.Second, want: 0.05, ok: true},
		{name: "steady", startFrac: 0.02, endFrac: 0.02, startUptime: time.Minute, endUpt: 2 * time.Minute, want: 0.02, ok: true},
		{name: "quiet window", startFrac: 0.04, endFrac: 0.02, startUptime: 10 * time.Second, endUpt: 20 * time.Second, want: 0, ok: true},
		{name: "clamped below", startFrac: 0.5, endFrac: 0.01, startUptime: 10 * time.Second, endUpt: 20 * time.Second, want: 0, ok: true},
		{name: "clamped above", startFrac: 0, endFrac: 0.9, startUptime: 10 * time.Second, endUpt: 11 * time.Second, want: 1, ok: true},
		{name: "start uptime unknown", startFrac: 0.01, endFrac: 0.02, startUptime: 0, endUpt: 20 * time.Second},
		{name: "end uptime unknown", startFrac: 0.01, endFrac: 0.02, startUptime: 10 * time.Second, endUpt: 0},
		{name: "uptimes equal", startFrac: 0.01, endFrac: 0.02, startUptime: 10 * time.Second, endUpt: 10 * time.Second},
		{name: "uptimes decrease", startFrac: 0.01, endFrac: 0.02, startUptime: 20 * time.Second, endUpt: 10 * time.Second},
		{name: "NaN fraction", startFrac: math.NaN(), endFrac: 0.02, startUptime: 10 * time.Second, endUpt: 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := WindowGCCPU(tt.startFrac, tt.endFrac, tt.startUptime, tt.endUpt)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if ok && math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("share = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNearestRank(t *testing.T) {
	vals := []uint64{15, 20, 35, 40, 50}
	for _, tt := range []struct {
		p    int
		want uint64
	}{{5, 15}, {20, 15}, {30, 20}, {40, 20}, {50, 35}, {99, 50}, {100, 50}} {
		if got := nearestRank(vals, tt.p); got != tt.want {
			t.Errorf("p%d = %d, want %d", tt.p, got, tt.want)
		}
	}
}

func BenchmarkNewWindow(b *testing.B) {
	start, end := snapshot(1000, 0, micro), snapshot(1400, 0, micro)
	b.ReportAllocs()
	for b.Loop() {
		NewWindow(start, end, time.Minute)
	}
}
