package trigger

import (
	"math"
	"strings"
	"testing"
	"time"
)

// t0 is the time of the first sample of every sequence.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// memSample is a sample with memory used of limit bytes known.
func memSample(used, limit uint64) Sample {
	return Sample{Known: KnownMemory | KnownMemoryLimit, Memory: used, MemoryLimit: limit}
}

// rssSample is a sample of process pid with rss bytes resident.
func rssSample(pid int, rss uint64) Sample {
	return Sample{Known: KnownPID | KnownRSS, PID: pid, RSS: rss}
}

// heapSample is a sample with a heap-after-GC measurement and a memory
// limit.
func heapSample(heap, limit uint64) Sample {
	return Sample{Known: KnownHeapAfterGC | KnownMemoryLimit, HeapAfterGC: heap, MemoryLimit: limit}
}

// goroutineSample is a sample with n goroutines.
func goroutineSample(n uint64) Sample {
	return Sample{Known: KnownGoroutines, Goroutines: n}
}

// gcSample is a sample of a process started an hour before t0 whose GC
// has used gcSeconds of its CPU time by lastGC.
func gcSample(gcSeconds float64, lastGC time.Time) Sample {
	start := t0.Add(-time.Hour)
	return Sample{
		Known:         KnownGCCPU | KnownStart,
		Start:         start,
		GCCPUFraction: gcSeconds / lastGC.Sub(start).Seconds(),
		LastGC:        lastGC,
	}
}

// step is one sample of a sequence and what Observe should say of it.
type step struct {
	at  time.Duration // after t0
	smp Sample
	// fire is whether the rule fires; value and threshold are then the
	// firing's.
	fire             bool
	value, threshold float64
}

func TestState_Observe(t *testing.T) {
	const limit = 1000
	tests := []struct {
		name       string
		expr       string
		hysteresis float64
		cooldown   time.Duration
		steps      []step
	}{
		{
			name: "fires once while the condition holds",
			expr: "memory>=80%",
			steps: []step{
				{at: 0, smp: memSample(500, limit)},
				{at: time.Minute, smp: memSample(850, limit), fire: true, value: 85, threshold: 80},
				{at: 20 * time.Minute, smp: memSample(900, limit)},
				{at: 40 * time.Minute, smp: memSample(950, limit)},
			},
		},
		{
			name: "holds at the first sample",
			expr: "memory>=80%",
			steps: []step{
				{at: 0, smp: memSample(800, limit), fire: true, value: 80, threshold: 80},
			},
		},
		{
			name: "> excludes the threshold, >= includes it",
			expr: "memory>80%",
			steps: []step{
				{at: 0, smp: memSample(800, limit)},
				{at: time.Minute, smp: memSample(801, limit), fire: true, value: 80.1, threshold: 80},
			},
		},
		{
			name: "flapping within the hysteresis fires once",
			expr: "memory>=80%",
			steps: []step{
				{at: 0, smp: memSample(810, limit), fire: true, value: 81, threshold: 80},
				{at: 15 * time.Minute, smp: memSample(790, limit)},
				{at: 30 * time.Minute, smp: memSample(810, limit)},
				{at: 45 * time.Minute, smp: memSample(751, limit)}, // 75.1: not below 80 − 5
				{at: 60 * time.Minute, smp: memSample(820, limit)},
			},
		},
		{
			name: "re-armed below the hysteresis, fires again",
			expr: "memory>=80%",
			steps: []step{
				{at: 0, smp: memSample(810, limit), fire: true, value: 81, threshold: 80},
				{at: 15 * time.Minute, smp: memSample(740, limit)},
				{at: 30 * time.Minute, smp: memSample(810, limit), fire: true, value: 81, threshold: 80},
			},
		},
		{
			name:       "hysteresis set in the metric's unit",
			expr:       "memory>=80%",
			hysteresis: 20,
			steps: []step{
				{at: 0, smp: memSample(810, limit), fire: true, value: 81, threshold: 80},
				{at: 15 * time.Minute, smp: memSample(650, limit)},
				{at: 30 * time.Minute, smp: memSample(810, limit)},
				{at: 45 * time.Minute, smp: memSample(590, limit)},
				{at: 60 * time.Minute, smp: memSample(810, limit), fire: true, value: 81, threshold: 80},
			},
		},
		{
			name:       "no hysteresis and no cooldown: every rise fires",
			expr:       "memory>=80%",
			hysteresis: -1,
			cooldown:   -1,
			steps: []step{
				{at: 0, smp: memSample(810, limit), fire: true, value: 81, threshold: 80},
				{at: time.Second, smp: memSample(790, limit)},
				{at: 2 * time.Second, smp: memSample(810, limit), fire: true, value: 81, threshold: 80},
				{at: 3 * time.Second, smp: memSample(800, limit)},
				{at: 4 * time.Second, smp: memSample(799, limit)},
				{at: 5 * time.Second, smp: memSample(800, limit), fire: true, value: 80, threshold: 80},
			},
		},
		{
			name: "cooldown holds a re-armed rule until it ends",
			expr: "memory>=80%",
			steps: []step{
				{at: 0, smp: memSample(900, limit), fire: true, value: 90, threshold: 80},
				{at: time.Minute, smp: memSample(500, limit)},
				{at: 2 * time.Minute, smp: memSample(900, limit)},
				{at: 9*time.Minute + 59*time.Second, smp: memSample(950, limit)},
				{at: 10 * time.Minute, smp: memSample(960, limit), fire: true, value: 96, threshold: 80},
			},
		},
		{
			name:     "a cooldown set by the rule",
			expr:     "memory>=80%",
			cooldown: time.Hour,
			steps: []step{
				{at: 0, smp: memSample(900, limit), fire: true, value: 90, threshold: 80},
				{at: time.Minute, smp: memSample(500, limit)},
				{at: 30 * time.Minute, smp: memSample(900, limit)},
				{at: 61 * time.Minute, smp: memSample(900, limit), fire: true, value: 90, threshold: 80},
			},
		},
		{
			name: "unknown values neither fire nor re-arm",
			expr: "memory>=80%",
			steps: []step{
				{at: 0, smp: Sample{Known: KnownMemoryLimit, MemoryLimit: limit, Memory: 900}}, // memory unknown
				{at: time.Minute, smp: Sample{Known: KnownMemory, Memory: 900}},                // no limit
				{at: 2 * time.Minute, smp: memSample(900, 0)},                                  // a limit of 0
				{at: 3 * time.Minute, smp: memSample(900, limit), fire: true, value: 90, threshold: 80},
				{at: 20 * time.Minute, smp: Sample{Known: KnownMemoryLimit, MemoryLimit: limit}}, // zero, but unknown
				{at: 30 * time.Minute, smp: memSample(900, limit)},
			},
		},
		{
			name: "memory in bytes needs no limit",
			expr: "memory>=1KiB",
			steps: []step{
				{at: 0, smp: Sample{Known: KnownMemory, Memory: 1000}},
				{at: time.Minute, smp: Sample{Known: KnownMemory, Memory: 2000}, fire: true, value: 2000, threshold: 1024},
			},
		},
		{
			name: "below a threshold",
			expr: "memory<10%",
			steps: []step{
				{at: 0, smp: memSample(500, limit)},
				{at: time.Minute, smp: memSample(90, limit), fire: true, value: 9, threshold: 10},
				{at: 20 * time.Minute, smp: memSample(140, limit)}, // 14: not above 10 + 5
				{at: 40 * time.Minute, smp: memSample(90, limit)},
				{at: 50 * time.Minute, smp: memSample(160, limit)},
				{at: 60 * time.Minute, smp: memSample(90, limit), fire: true, value: 9, threshold: 10},
			},
		},
		{
			name: "rss with the default hysteresis of 5 % of the threshold",
			expr: "rss>=1000B",
			steps: []step{
				{at: 0, smp: rssSample(1, 1000), fire: true, value: 1000, threshold: 1000},
				{at: 20 * time.Minute, smp: rssSample(1, 951)},
				{at: 30 * time.Minute, smp: rssSample(1, 1000)},
				{at: 40 * time.Minute, smp: rssSample(1, 949)},
				{at: 50 * time.Minute, smp: rssSample(1, 1000), fire: true, value: 1000, threshold: 1000},
			},
		},
		{
			name: "gomemlimit: the runtime's count against GOMEMLIMIT",
			expr: "gomemlimit>=90%",
			steps: []step{
				{at: 0, smp: Sample{Known: KnownGoMemory, GoMemory: 950}}, // no GOMEMLIMIT
				{at: time.Minute, smp: Sample{Known: KnownGoMemLimit | KnownGoMemory, GoMemLimit: 1000, GoMemory: 800}},
				{at: 2 * time.Minute, smp: Sample{Known: KnownGoMemLimit | KnownGoMemory, GoMemLimit: 1000, GoMemory: 950}, fire: true, value: 95, threshold: 90},
			},
		},
		{
			name:     "rss_high fires at each step above the last mark",
			expr:     "rss_high>=64MiB",
			cooldown: -1,
			steps: []step{
				{at: 0, smp: rssSample(1, 100<<20)}, // the first mark
				{at: time.Minute, smp: rssSample(1, 150<<20)},
				{at: 2 * time.Minute, smp: rssSample(1, 170<<20), fire: true, value: 170 << 20, threshold: 164 << 20},
				{at: 3 * time.Minute, smp: rssSample(1, 200<<20)},
				{at: 4 * time.Minute, smp: rssSample(1, 120<<20)},
				{at: 5 * time.Minute, smp: rssSample(1, 234<<20), fire: true, value: 234 << 20, threshold: 234 << 20},
				{at: 6 * time.Minute, smp: rssSample(1, 600<<20), fire: true, value: 600 << 20, threshold: 298 << 20},
				{at: 7 * time.Minute, smp: rssSample(1, 663<<20)},
			},
		},
		{
			name: "rss_high within the cooldown keeps its mark",
			expr: "rss_high>=64MiB",
			steps: []step{
				{at: 0, smp: rssSample(1, 100<<20)},
				{at: time.Minute, smp: rssSample(1, 200<<20), fire: true, value: 200 << 20, threshold: 164 << 20},
				{at: 2 * time.Minute, smp: rssSample(1, 300<<20)},
				{at: 11 * time.Minute, smp: rssSample(1, 310<<20), fire: true, value: 310 << 20, threshold: 264 << 20},
			},
		},
		{
			name:     "rss_high starts a new mark when the process restarts",
			expr:     "rss_high>=64MiB",
			cooldown: -1,
			steps: []step{
				{at: 0, smp: rssSample(1, 100<<20)},
				{at: time.Minute, smp: rssSample(1, 900<<20), fire: true, value: 900 << 20, threshold: 164 << 20},
				{at: 2 * time.Minute, smp: rssSample(2, 20<<20)}, // a new process: its first mark
				{at: 3 * time.Minute, smp: rssSample(2, 80<<20)},
				{at: 4 * time.Minute, smp: rssSample(2, 90<<20), fire: true, value: 90 << 20, threshold: 84 << 20},
			},
		},
		{
			name: "heap_time_to_limit from the slope of the measurements",
			expr: "heap_time_to_limit<=6h",
			steps: []step{
				// 10 MiB an hour towards a 1000 MiB limit.
				{at: 0, smp: heapSample(800<<20, 1000<<20)},
				{at: time.Minute, smp: Sample{Known: KnownMemoryLimit, MemoryLimit: 1000 << 20}}, // no measurement
				{at: time.Hour, smp: heapSample(810<<20, 1000<<20)},
				{at: 2 * time.Hour, smp: heapSample(820<<20, 1000<<20)}, // 18h left
				{at: 14 * time.Hour, smp: heapSample(940<<20, 1000<<20), fire: true, value: 6 * 3600, threshold: 6 * 3600},
				{at: 15 * time.Hour, smp: heapSample(950<<20, 1000<<20)}, // 5h: fired already
			},
		},
		{
			name: "heap_time_to_limit: a heap that does not grow never reaches the limit",
			expr: "heap_time_to_limit<=6h",
			steps: []step{
				{at: 0, smp: heapSample(990<<20, 1000<<20)},
				{at: time.Hour, smp: heapSample(995<<20, 1000<<20)},
				{at: 2 * time.Hour, smp: heapSample(980<<20, 1000<<20)},
				{at: 3 * time.Hour, smp: heapSample(970<<20, 1000<<20)},
			},
		},
		{
			name: "heap_time_to_limit: at the limit there is no time left",
			expr: "heap_time_to_limit<=6h",
			steps: []step{
				{at: 0, smp: heapSample(900<<20, 1000<<20)},
				{at: time.Hour, smp: heapSample(950<<20, 1000<<20)},
				{at: 2 * time.Hour, smp: heapSample(1000<<20, 1000<<20), fire: true, value: 0, threshold: 6 * 3600},
			},
		},
		{
			name: "heap_time_to_limit towards the smaller of GOMEMLIMIT and the memory limit",
			expr: "heap_time_to_limit<=6h",
			steps: []step{
				{at: 0, smp: Sample{Known: KnownHeapAfterGC | KnownGoMemLimit, HeapAfterGC: 500 << 20, GoMemLimit: 600 << 20}},
				{at: time.Hour, smp: Sample{Known: KnownHeapAfterGC | KnownGoMemLimit, HeapAfterGC: 510 << 20, GoMemLimit: 600 << 20}},
				// 80 MiB to GOMEMLIMIT at 10 MiB an hour; the cgroup's 4 GiB
				// is farther.
				{at: 2 * time.Hour, smp: Sample{Known: KnownHeapAfterGC | KnownGoMemLimit | KnownMemoryLimit, HeapAfterGC: 520 << 20, GoMemLimit: 600 << 20, MemoryLimit: 4 << 30}},
				{at: 4 * time.Hour, smp: Sample{Known: KnownHeapAfterGC | KnownGoMemLimit | KnownMemoryLimit, HeapAfterGC: 540 << 20, GoMemLimit: 600 << 20, MemoryLimit: 4 << 30}, fire: true, value: 6 * 3600, threshold: 6 * 3600},
			},
		},
		{
			name: "goroutines",
			expr: "goroutines>=10000",
			steps: []step{
				{at: 0, smp: goroutineSample(9999)},
				{at: time.Minute, smp: goroutineSample(10000), fire: true, value: 10000, threshold: 10000},
				{at: 20 * time.Minute, smp: goroutineSample(9600)}, // 5 % of 10000 is 500
				{at: 30 * time.Minute, smp: goroutineSample(12000)},
				{at: 40 * time.Minute, smp: goroutineSample(9400)},
				{at: 50 * time.Minute, smp: goroutineSample(11000), fire: true, value: 11000, threshold: 10000},
			},
		},
		{
			name: "goroutine_growth over the last ten minutes",
			expr: "goroutine_growth>=1000",
			steps: []step{
				{at: 0, smp: goroutineSample(5000)}, // the first count: no growth yet
				{at: time.Minute, smp: goroutineSample(100)},
				{at: 5 * time.Minute, smp: goroutineSample(1150), fire: true, value: 1050, threshold: 1000},
				// The 100 has left the window: the lowest since is 1150.
				{at: 12 * time.Minute, smp: goroutineSample(1200)},
				// The 1150 too: the lowest is 1200.
				{at: 16 * time.Minute, smp: goroutineSample(2300), fire: true, value: 1100, threshold: 1000},
				{at: 30 * time.Minute, smp: goroutineSample(2300)},
			},
		},
		{
			name: "goroutine_growth of a new process starts over",
			expr: "goroutine_growth>=1000",
			steps: []step{
				{at: 0, smp: Sample{Known: KnownGoroutines | KnownStart, Goroutines: 10, Start: t0.Add(-time.Hour)}},
				{at: time.Minute, smp: Sample{Known: KnownGoroutines | KnownStart, Goroutines: 500, Start: t0.Add(-time.Hour)}},
				{at: 2 * time.Minute, smp: Sample{Known: KnownGoroutines | KnownStart, Goroutines: 1500, Start: t0.Add(2 * time.Minute)}},
				{at: 3 * time.Minute, smp: Sample{Known: KnownGoroutines | KnownStart, Goroutines: 1600, Start: t0.Add(2 * time.Minute)}},
			},
		},
		{
			name: "gc_cpu over the window",
			expr: "gc_cpu>=25%",
			steps: []step{
				{at: 0, smp: gcSample(72, t0)},                                                                           // 2 % of the first hour: no window yet
				{at: time.Minute, smp: gcSample(84, t0.Add(time.Minute)), fire: false},                                   // 12 s in a minute: 20 %
				{at: 2 * time.Minute, smp: gcSample(114, t0.Add(2*time.Minute)), fire: true, value: 35, threshold: 25},   // 42 s in 2 minutes
				{at: 30 * time.Minute, smp: gcSample(114, t0.Add(2*time.Minute))},                                        // no GC since: 0 %, re-armed
				{at: 31 * time.Minute, smp: gcSample(144, t0.Add(31*time.Minute)), fire: true, value: 50, threshold: 25}, // 30 s in a minute
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Parse(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			r := Rule{Expr: e, Hysteresis: tt.hysteresis, Cooldown: tt.cooldown}
			var s State
			for i, st := range tt.steps {
				smp := st.smp
				smp.Time = t0.Add(st.at)
				f, fired := s.Observe(r, smp)
				if fired != st.fire {
					t.Fatalf("step %d (%v): fired %v (%+v), want %v", i, st.at, fired, f, st.fire)
				}
				if !fired {
					continue
				}
				if !near(f.Value, st.value) || !near(f.Threshold, st.threshold) || f.Expr != e.String() ||
					f.Unit != e.Unit.String() || !f.At.Equal(smp.Time) {
					t.Errorf("step %d: %+v, want value %g, threshold %g at %v", i, f, st.value, st.threshold, smp.Time)
				}
			}
		})
	}
}

// TestState_gcCPU checks gc_cpu's value sample by sample: its base is
// the oldest sample of the window, or the latest before it.
func TestState_gcCPU(t *testing.T) {
	e, err := Parse("gc_cpu>=25%")
	if err != nil {
		t.Fatal(err)
	}
	var s State
	values := []struct {
		at   time.Duration
		smp  Sample
		want float64 // NaN: unknown
	}{
		{0, gcSample(72, t0), math.NaN()},
		{time.Minute, gcSample(84, t0.Add(time.Minute)), 20},
		{2 * time.Minute, gcSample(114, t0.Add(2*time.Minute)), 35},
		{30 * time.Minute, gcSample(114, t0.Add(2*time.Minute)), 0},
		{31 * time.Minute, gcSample(144, t0.Add(31*time.Minute)), 50},
		{32 * time.Minute, gcSample(150, t0.Add(32*time.Minute)), 30},
		{33 * time.Minute, Sample{Known: KnownGCCPU, GCCPUFraction: 0.5, LastGC: t0.Add(33 * time.Minute)}, math.NaN()}, // no start time
	}
	for i, v := range values {
		smp := v.smp
		smp.Time = t0.Add(v.at)
		s.track(smp)
		got, _, ok := s.value(e, smp)
		if ok == math.IsNaN(v.want) || ok && !near(got, v.want) {
			t.Errorf("sample %d: gc_cpu %g, %v; want %g", i, got, ok, v.want)
		}
	}
}

func TestFiring_String(t *testing.T) {
	tests := []struct {
		f    Firing
		want string
	}{
		{Firing{Expr: "memory>=80%", Value: 83.25, Threshold: 80, Unit: "%"}, "memory>=80%: 83.2% (threshold 80.0%)"},
		{Firing{Expr: "rss_high>=64MiB", Value: 300 << 20, Threshold: 264 << 20, Unit: "B"}, "rss_high>=64MiB: 300 MiB (threshold 264 MiB)"},
		{Firing{Expr: "heap_time_to_limit<=6h", Value: 5 * 3600, Threshold: 6 * 3600, Unit: "s"}, "heap_time_to_limit<=6h: 5.0 hours (threshold 6.0 hours)"},
		{Firing{Expr: "goroutines>=10000", Value: 12345, Threshold: 10000}, "goroutines>=10000: 12.3k (threshold 10.0k)"},
	}
	for _, tt := range tests {
		if got := tt.f.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// near reports whether a and b agree to a millionth.
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b))
}

func TestNewRule(t *testing.T) {
	tests := []struct {
		expr, hysteresis string
		cooldown         time.Duration
		want             Rule
		wantErr          string
	}{
		{expr: "memory>=80%", hysteresis: "", cooldown: 10 * time.Minute, want: Rule{Hysteresis: 0, Cooldown: 10 * time.Minute}},
		{expr: "memory>=80%", hysteresis: "3%", cooldown: 0, want: Rule{Hysteresis: 3, Cooldown: -1}},
		{expr: "rss>=1GiB", hysteresis: "64MiB", want: Rule{Hysteresis: 64 << 20, Cooldown: -1}},
		{expr: "goroutines>=10000", hysteresis: "0", want: Rule{Hysteresis: -1, Cooldown: -1}},
		{expr: "heap_time_to_limit<=6h", hysteresis: "30m", want: Rule{Hysteresis: 1800, Cooldown: -1}},
		{expr: "memory>=80%", hysteresis: "64MiB", wantErr: `hysteresis "64MiB": give it in the unit of memory, e.g. 5%`},
		{expr: "memory>=80", wantErr: `trigger "memory>=80"`},
	}
	for _, tt := range tests {
		t.Run(tt.expr+" "+tt.hysteresis, func(t *testing.T) {
			r, err := NewRule(tt.expr, tt.hysteresis, tt.cooldown)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("NewRule error = %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewRule: %v", err)
			}
			if r.Expr.String() != tt.expr || r.Hysteresis != tt.want.Hysteresis || r.Cooldown != tt.want.Cooldown {
				t.Errorf("NewRule = %s hysteresis %v cooldown %v, want hysteresis %v cooldown %v",
					r.Expr, r.Hysteresis, r.Cooldown, tt.want.Hysteresis, tt.want.Cooldown)
			}
		})
	}
}

func TestRule_CannotFire(t *testing.T) {
	limited := Sample{Known: KnownMemory | KnownMemoryLimit | KnownGoMemLimit, Memory: 1 << 20, MemoryLimit: 1 << 30, GoMemLimit: 1 << 29}
	bare := Sample{Known: KnownMemory | KnownRSS | KnownGoroutines, Memory: 1 << 20}
	tests := []struct {
		expr string
		smp  Sample
		says string // "" when the rule can fire
	}{
		{"memory>=80%", limited, ""},
		{"memory>=80%", bare, "no memory limit"},
		{"memory>=1GiB", bare, ""},
		{"gomemlimit>=90%", limited, ""},
		{"gomemlimit>=90%", bare, "without GOMEMLIMIT"},
		{"heap_time_to_limit<=1h", bare, "neither a memory limit nor GOMEMLIMIT"},
		{"heap_time_to_limit<=1h", limited, ""},
		{"goroutines>=10000", bare, ""},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			r, err := NewRule(tt.expr, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			got := r.CannotFire(tt.smp)
			if tt.says == "" && got != "" || tt.says != "" && !strings.Contains(got, tt.says) {
				t.Errorf("CannotFire = %q, want %q", got, tt.says)
			}
		})
	}
}
