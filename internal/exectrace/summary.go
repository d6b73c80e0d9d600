package exectrace

import (
	"slices"
	"time"

	"github.com/heapscope/heapscope/internal/result"
)

// Summarise computes the timeline's figures.
func (t *Timeline) Summarise() result.TraceSummary {
	s := result.TraceSummary{DurationSeconds: t.Duration.Seconds(), Cycles: len(t.Cycles), Pauses: len(t.Pauses)}
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
