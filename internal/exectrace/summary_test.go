package exectrace

import (
	"math"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/result"
)

func TestTimeline_Summarise(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		tl   Timeline
		want result.TraceSummary
	}{
		{
			name: "empty",
			tl:   Timeline{Duration: time.Second},
			want: result.TraceSummary{DurationSeconds: 1},
		},
		{
			name: "two cycles, one partial, one pause apart from the GC",
			tl: Timeline{
				Duration: time.Second,
				Cycles: []Cycle{
					{Start: 0, End: 100 * ms, MarkStart: 0, MarkEnd: 90 * ms, Partial: true},
					{Start: 500 * ms, End: 700 * ms, MarkStart: 510 * ms, MarkEnd: 690 * ms, SweepTermination: 10 * ms, MarkTermination: 10 * ms},
				},
				Pauses: []Pause{
					{Start: 500 * ms, Duration: 10 * ms, GC: true},
					{Start: 600 * ms, Duration: 30 * ms},
					{Start: 690 * ms, Duration: 10 * ms, GC: true},
				},
				Heap:       []Point{{0, 300}, {ms, 100}, {2 * ms, 500}},
				Goal:       []Point{{0, 400}, {ms, 800}},
				MarkAssist: 5 * ms,
			},
			want: result.TraceSummary{
				DurationSeconds: 1, Cycles: 2, CompleteCycles: 1, CyclesPerSecond: 2,
				GCShare: 0.3, STWShare: 0.05, GCSTWShare: 0.02, Pauses: 3, GCPauses: 2,
				PauseP50Seconds: 0.01, PauseP99Seconds: 0.03, PauseMaxSeconds: 0.03,
				MarkMeanSeconds: 0.18, MarkMaxSeconds: 0.18, MarkAssistSeconds: 0.005,
				HeapMinBytes: 100, HeapMaxBytes: 500, GoalLastBytes: 800,
			},
		},
		{
			name: "overlapping figures are capped at the whole",
			tl: Timeline{
				Duration: 10 * ms,
				Cycles:   []Cycle{{Start: 0, End: 20 * ms, Partial: true}},
			},
			want: result.TraceSummary{DurationSeconds: 0.01, Cycles: 1, CyclesPerSecond: 100, GCShare: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.tl.Summarise()
			if !closeSummary(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func closeSummary(a, b result.TraceSummary) bool {
	fs := func(s result.TraceSummary) []float64 {
		return []float64{s.DurationSeconds, s.CyclesPerSecond, s.GCShare, s.STWShare, s.GCSTWShare,
			s.PauseP50Seconds, s.PauseP99Seconds, s.PauseMaxSeconds, s.MarkMeanSeconds, s.MarkMaxSeconds, s.MarkAssistSeconds}
	}
	fa, fb := fs(a), fs(b)
	for i := range fa {
		if math.Abs(fa[i]-fb[i]) > 1e-9 {
			return false
		}
	}
	return a.Cycles == b.Cycles && a.CompleteCycles == b.CompleteCycles && a.Pauses == b.Pauses && a.GCPauses == b.GCPauses &&
		a.HeapMinBytes == b.HeapMinBytes && a.HeapMaxBytes == b.HeapMaxBytes && a.GoalLastBytes == b.GoalLastBytes
}

func TestDownsample(t *testing.T) {
	var ps []Point
	for i := range 1000 {
		v := uint64(i % 10)
		if i == 537 {
			v = 1000 // a spike must survive
		}
		ps = append(ps, Point{T: time.Duration(i), Value: v})
	}
	tests := []struct {
		name string
		in   []Point
		n    int
		want int
	}{
		{"short enough", ps[:50], 100, 50},
		{"halved to pairs", ps, 100, 100},
		{"at least two", ps, 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Downsample(tt.in, tt.n)
			if len(got) != tt.want {
				t.Fatalf("%d points, want %d", len(got), tt.want)
			}
			var peak uint64
			for i, p := range got {
				peak = max(peak, p.Value)
				if i > 0 && p.T < got[i-1].T {
					t.Fatalf("out of time order at %d", i)
				}
			}
			if len(tt.in) > 537 && peak != 1000 {
				t.Errorf("the spike was lost: peak %d", peak)
			}
		})
	}
}
