package exectrace

import (
	"github.com/heapscope/heapscope/internal/result"
)

// DefaultMaxPoints is how many points of each series a Result keeps.
const DefaultMaxPoints = 1000

// Result returns the timeline as result.json carries it, keeping at most maxPoints
// points of each series (DefaultMaxPoints when 0).
func (t *Timeline) Result(maxPoints int) *result.Trace {
	if maxPoints <= 0 {
		maxPoints = DefaultMaxPoints
	}
	r := &result.Trace{Summary: t.Summarise(), Cycles: []result.TraceCycle{}, Pauses: []result.TracePause{}}
	for _, c := range t.Cycles {
		r.Cycles = append(r.Cycles, result.TraceCycle{
			StartSeconds: c.Start.Seconds(), EndSeconds: c.End.Seconds(), MarkSeconds: c.Mark().Seconds(),
			SweepTerminationSeconds: c.SweepTermination.Seconds(), MarkTerminationSeconds: c.MarkTermination.Seconds(),
			HeapBeforeBytes: c.HeapBefore, HeapAfterBytes: c.HeapAfter, GoalBytes: c.Goal, Partial: c.Partial,
		})
	}
	for _, p := range t.Pauses {
		r.Pauses = append(r.Pauses, result.TracePause{StartSeconds: p.Start.Seconds(), DurationSeconds: p.Duration.Seconds(), Reason: p.Reason, GC: p.GC, Partial: p.Partial})
	}
	r.Heap = pairs(Downsample(t.Heap, maxPoints))
	r.Goal = pairs(Downsample(t.Goal, maxPoints))
	return r
}

func pairs(ps []Point) [][2]float64 {
	out := make([][2]float64, len(ps))
	for i, p := range ps {
		out[i] = [2]float64{p.T.Seconds(), float64(p.Value)}
	}
	return out
}
