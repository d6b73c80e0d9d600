package exectrace

import (
	"slices"
	"time"
)

// Summary is the timeline in numbers. Durations are in seconds, sizes in
// bytes, shares from 0 to 1.
type Summary struct {
	// DurationSeconds is the trace's length.
	DurationSeconds float64 `json:"duration_seconds"`
	// Cycles counts the GC cycles in the trace, Complete those wholly in
	// it; CyclesPerSecond is Cycles over the duration.
	Cycles          int     `json:"cycles"`
	CompleteCycles  int     `json:"complete_cycles"`
	CyclesPerSecond float64 `json:"cycles_per_second"`
	// GCShare is the share of wall time during which a GC cycle was under
	// way (from its sweep-termination pause to the end of its
	// mark-termination pause); STWShare the share spent stopped (every
	// pause), GCSTWShare the share in the GC's own pauses.
	GCShare    float64 `json:"gc_share"`
	STWShare   float64 `json:"stw_share"`
	GCSTWShare float64 `json:"gc_stw_share"`
	// Pauses counts the stop-the-world pauses, GCPauses the GC's own.
	Pauses   int `json:"pauses"`
	GCPauses int `json:"gc_pauses"`
	// PauseP50Seconds, PauseP99Seconds and PauseMaxSeconds are over
	// every pause.
	PauseP50Seconds float64 `json:"pause_p50_seconds"`
	PauseP99Seconds float64 `json:"pause_p99_seconds"`
	PauseMaxSeconds float64 `json:"pause_max_seconds"`
	// MarkMeanSeconds and MarkMaxSeconds are the lengths of the complete
	// cycles' concurrent mark phases.
	MarkMeanSeconds float64 `json:"mark_mean_seconds"`
	MarkMaxSeconds  float64 `json:"mark_max_seconds"`
	// MarkAssistSeconds is the time goroutines spent in mark assists.
	MarkAssistSeconds float64 `json:"mark_assist_seconds"`
	// HeapMinBytes and HeapMaxBytes are the extremes of HeapAlloc,
	// GoalLastBytes the last heap goal; 0 when the trace had none.
	HeapMinBytes  uint64 `json:"heap_min_bytes"`
	HeapMaxBytes  uint64 `json:"heap_max_bytes"`
	GoalLastBytes uint64 `json:"goal_last_bytes"`
}

// Summarise computes the timeline's figures.
func (t *Timeline) Summarise() Summary {
	s := Summary{DurationSeconds: t.Duration.Seconds(), Cycles: len(t.Cycles), Pauses: len(t.Pauses)}
	if t.Duration > 0 {
		s.CyclesPerSecond = float64(len(t.Cycles)) / t.Duration.Seconds()
	}
	var gc, marks time.Duration
	var maxMark time.Duration
	for _, c := range t.Cycles {
		gc += c.Length()
		if !c.Partial {
			s.CompleteCycles++
			marks += c.Mark()
			maxMark = max(maxMark, c.Mark())
		}
	}
	if s.CompleteCycles > 0 {
		s.MarkMeanSeconds = marks.Seconds() / float64(s.CompleteCycles)
		s.MarkMaxSeconds = maxMark.Seconds()
	}
	var stw, gcSTW time.Duration
	ds := make([]time.Duration, len(t.Pauses))
	for i, p := range t.Pauses {
		ds[i] = p.Duration
		stw += p.Duration
		if p.GC {
			gcSTW += p.Duration
			s.GCPauses++
		}
	}
	if t.Duration > 0 {
		s.GCShare = min(1, gc.Seconds()/t.Duration.Seconds())
		s.STWShare = min(1, stw.Seconds()/t.Duration.Seconds())
		s.GCSTWShare = min(1, gcSTW.Seconds()/t.Duration.Seconds())
	}
	if len(ds) > 0 {
		slices.Sort(ds)
		s.PauseP50Seconds = quantile(ds, 0.50).Seconds()
		s.PauseP99Seconds = quantile(ds, 0.99).Seconds()
		s.PauseMaxSeconds = ds[len(ds)-1].Seconds()
	}
	s.MarkAssistSeconds = t.MarkAssist.Seconds()
	for i, p := range t.Heap {
		if i == 0 || p.Value < s.HeapMinBytes {
			s.HeapMinBytes = p.Value
		}
		s.HeapMaxBytes = max(s.HeapMaxBytes, p.Value)
	}
	if len(t.Goal) > 0 {
		s.GoalLastBytes = t.Goal[len(t.Goal)-1].Value
	}
	return s
}

// quantile is the nearest-rank quantile of sorted values.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func sortPauses(ps []Pause) {
	slices.SortStableFunc(ps, func(a, b Pause) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
}

// Downsample returns at most n points of ps (n ≥ 2) that keep its shape:
// the points are cut into n/2 buckets of equal count and each bucket keeps
// its lowest and highest point, in time order. ps itself is returned when
// it is short enough.
func Downsample(ps []Point, n int) []Point {
	n = max(n, 2)
	if len(ps) <= n {
		return ps
	}
	buckets := n / 2
	out := make([]Point, 0, 2*buckets)
	for b := 0; b < buckets; b++ {
		lo, hi := b*len(ps)/buckets, (b+1)*len(ps)/buckets
		minI, maxI := lo, lo
		for i := lo; i < hi; i++ {
			if ps[i].Value < ps[minI].Value {
				minI = i
			}
			if ps[i].Value > ps[maxI].Value {
				maxI = i
			}
		}
		first, second := min(minI, maxI), max(minI, maxI)
		out = append(out, ps[first])
		if second != first {
			out = append(out, ps[second])
		}
	}
	return out
}
