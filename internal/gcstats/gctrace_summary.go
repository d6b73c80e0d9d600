package gcstats

import (
	"math"
	"slices"
)

// Percentiles are nearest-rank percentiles of a set of values, in the
// values' unit.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// percentiles computes the percentiles of vs (which it sorts).
func percentiles(vs []float64) Percentiles {
	if len(vs) == 0 {
		return Percentiles{}
	}
	slices.Sort(vs)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(vs)))) - 1
		return vs[max(i, 0)]
	}
	return Percentiles{P50: rank(50), P90: rank(90), P99: rank(99), Max: vs[len(vs)-1]}
}

// TraceSummary is what a gctrace log says about a program's GC.
type TraceSummary struct {
	// Cycles counts the GC cycles; Forced those forced by runtime.GC or
	// debug.FreeOSMemory, Periodic those the runtime forced after two
	// idle minutes, LeakChecks those that looked for leaked goroutines.
	Cycles     int `json:"cycles"`
	Forced     int `json:"forced"`
	Periodic   int `json:"periodic"`
	LeakChecks int `json:"leak_checks"`
	// FirstAtSeconds and LastAtSeconds are the first and last cycles'
	// starts, since process start; SpanSeconds the time between them.
	FirstAtSeconds float64 `json:"first_at_seconds"`
	LastAtSeconds  float64 `json:"last_at_seconds"`
	SpanSeconds    float64 `json:"span_seconds"`
	// CyclesPerSecond is the rate of cycles over the span (cycles after
	// the first, divided by the span); 0 with fewer than two cycles.
	CyclesPerSecond float64 `json:"cycles_per_second"`
	// PauseSeconds are the stop-the-world wall-clock pauses per cycle
	// (sweep termination plus mark termination); PauseTotalSeconds their
	// sum.
	PauseSeconds      Percentiles `json:"pause_seconds"`
	PauseTotalSeconds float64     `json:"pause_total_seconds"`
	// MarkSeconds is the concurrent mark phase's wall clock per cycle.
	MarkSeconds Percentiles `json:"mark_seconds"`
	// CPUSeconds is GC CPU time per cycle, all phases; the totals split
	// it.
	CPUSeconds                Percentiles `json:"cpu_seconds"`
	CPUTotalSeconds           float64     `json:"cpu_total_seconds"`
	STWCPUTotalSeconds        float64     `json:"stw_cpu_total_seconds"`
	AssistCPUTotalSeconds     float64     `json:"assist_cpu_total_seconds"`
	BackgroundCPUTotalSeconds float64     `json:"background_cpu_total_seconds"`
	IdleCPUTotalSeconds       float64     `json:"idle_cpu_total_seconds"`
	// GCCPUShare is the runtime's own share of CPU spent in GC since
	// process start, as of the last cycle; GCCPUSharePeak the highest
	// any cycle reported.
	GCCPUShare     float64 `json:"gc_cpu_share"`
	GCCPUSharePeak float64 `json:"gc_cpu_share_peak"`
	// Heap figures over the log: the largest heap at a cycle's start,
	// the largest live heap and goal, and the last cycle's.
	HeapStartPeakBytes uint64 `json:"heap_start_peak_bytes"`
	HeapLivePeakBytes  uint64 `json:"heap_live_peak_bytes"`
	HeapGoalPeakBytes  uint64 `json:"heap_goal_peak_bytes"`
	HeapLiveLastBytes  uint64 `json:"heap_live_last_bytes"`
	HeapGoalLastBytes  uint64 `json:"heap_goal_last_bytes"`
	// Procs is the last cycle's GOMAXPROCS.
	Procs int `json:"procs"`
	// Scavenger sums the scavtrace lines, when there are any.
	Scavenger *ScavengerSummary `json:"scavenger,omitempty"`
	// Series is every cycle, for the heap over time.
	Series []Cycle `json:"series"`
	// Warnings are the skipped lines and doubts, as text.
	Warnings []string `json:"warnings,omitempty"`
}

// ScavengerSummary sums scavtrace lines.
type ScavengerSummary struct {
	Lines int `json:"lines"`
	// ReturnedBytes is memory returned to the OS over the log, by the
	// background scavenger and eagerly; Forced counts forced scavenges.
	BackgroundBytes uint64 `json:"background_bytes"`
	EagerBytes      uint64 `json:"eager_bytes"`
	Forced          int    `json:"forced"`
	// ReleasedLastBytes is the heap memory returned to the OS as of the
	// last line.
	ReleasedLastBytes uint64 `json:"released_last_bytes"`
}

// Summarize computes the figures of a trace. It is pure.
func Summarize(t Trace) TraceSummary {
	s := TraceSummary{Cycles: len(t.Cycles), Series: t.Cycles}
	for _, w := range t.Warnings {
		s.Warnings = append(s.Warnings, w.Error())
	}
	if len(t.Cycles) == 0 {
		return s
	}
	pauses := make([]float64, 0, len(t.Cycles))
	marks := make([]float64, 0, len(t.Cycles))
	cpus := make([]float64, 0, len(t.Cycles))
	for i := range t.Cycles {
		c := &t.Cycles[i]
		if c.Forced {
			s.Forced++
		}
		if c.Periodic {
			s.Periodic++
		}
		if c.LeakCheck {
			s.LeakChecks++
		}
		pauses = append(pauses, c.PauseSeconds())
		marks = append(marks, c.MarkSeconds)
		cpus = append(cpus, c.CPUSeconds())
		s.PauseTotalSeconds += c.PauseSeconds()
		s.CPUTotalSeconds += c.CPUSeconds()
		s.STWCPUTotalSeconds += c.SweepTermCPUSeconds + c.MarkTermCPUSeconds
		s.AssistCPUTotalSeconds += c.AssistCPUSeconds
		s.BackgroundCPUTotalSeconds += c.BackgroundCPUSeconds
		s.IdleCPUTotalSeconds += c.IdleCPUSeconds
		s.GCCPUSharePeak = max(s.GCCPUSharePeak, c.GCCPUShare)
		s.HeapStartPeakBytes = max(s.HeapStartPeakBytes, c.HeapStartBytes)
		s.HeapLivePeakBytes = max(s.HeapLivePeakBytes, c.HeapLiveBytes)
		s.HeapGoalPeakBytes = max(s.HeapGoalPeakBytes, c.HeapGoalBytes)
	}
	first, last := &t.Cycles[0], &t.Cycles[len(t.Cycles)-1]
	s.FirstAtSeconds, s.LastAtSeconds = first.AtSeconds, last.AtSeconds
	if span := last.AtSeconds - first.AtSeconds; span > 0 {
		s.SpanSeconds = span
		s.CyclesPerSecond = float64(len(t.Cycles)-1) / span
	}
	s.PauseSeconds = percentiles(pauses)
	s.MarkSeconds = percentiles(marks)
	s.CPUSeconds = percentiles(cpus)
	s.GCCPUShare = last.GCCPUShare
	s.HeapLiveLastBytes, s.HeapGoalLastBytes = last.HeapLiveBytes, last.HeapGoalBytes
	s.Procs = last.Procs
	if len(t.Scavenges) > 0 {
		sc := &ScavengerSummary{Lines: len(t.Scavenges)}
		for _, l := range t.Scavenges {
			sc.BackgroundBytes += l.BackgroundBytes
			sc.EagerBytes += l.EagerBytes
			if l.Forced {
				sc.Forced++
			}
		}
		sc.ReleasedLastBytes = t.Scavenges[len(t.Scavenges)-1].ReleasedBytes
		s.Scavenger = sc
	}
	return s
}
