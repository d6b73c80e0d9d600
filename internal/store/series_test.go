package store

import (
	"testing"

	"github.com/heapscope/heapscope/internal/result"
)

func TestSeriesOf(t *testing.T) {
	leaky := readFixture(t, fixtureLeaky)
	last := leaky.HeapGrowth.Snapshots[len(leaky.HeapGrowth.Snapshots)-1]
	partial := readFixture(t, fixturePartial)
	plast := partial.HeapGrowth.Snapshots[len(partial.HeapGrowth.Snapshots)-1]
	tests := []struct {
		name   string
		result func() *result.Run
		want   map[string]float64
	}{
		{
			name:   "complete local run: every series",
			result: func() *result.Run { return readFixture(t, fixtureLeaky) },
			want: map[string]float64{
				MetricRSS:         float64(leaky.RSS.RSSBytes),
				MetricHeapAfterGC: float64(last.LiveBytes),
				MetricHeapObjects: float64(last.LiveObjects),
				MetricGoroutines:  float64(last.Goroutines),
				MetricAllocRate:   leaky.MemStats.AllocatedBytesPerSecond,
				MetricGCCPU:       leaky.MemStats.GCCPUFraction,
				MetricPauseP99:    leaky.MemStats.GCPauseP99Seconds,
				MetricLimit:       float64(leaky.RSS.Cgroup.LimitBytes),
			},
		},
		{
			name:   "partial run: the exact heap of its last snapshot, nothing the run could not measure",
			result: func() *result.Run { return readFixture(t, fixturePartial) },
			want: map[string]float64{
				MetricHeapAfterGC: float64(plast.LiveBytes),
				MetricHeapObjects: float64(plast.LiveObjects),
				MetricGoroutines:  float64(plast.Goroutines),
			},
		},
		{
			name: "no snapshots: the window's end MemStats",
			result: func() *result.Run {
				r := readFixture(t, fixtureLeaky)
				r.HeapGrowth = nil
				return r
			},
			want: map[string]float64{
				MetricRSS:         float64(leaky.RSS.RSSBytes),
				MetricHeapAfterGC: float64(leaky.MemStats.AllocBytes),
				MetricHeapObjects: float64(leaky.MemStats.HeapObjects),
				MetricAllocRate:   leaky.MemStats.AllocatedBytesPerSecond,
				MetricGCCPU:       leaky.MemStats.GCCPUFraction,
				MetricPauseP99:    leaky.MemStats.GCPauseP99Seconds,
				MetricLimit:       float64(leaky.RSS.Cgroup.LimitBytes),
			},
		},
		{
			name: "RSS unknown, GC share over the lifetime, no pauses covered",
			result: func() *result.Run {
				r := readFixture(t, fixtureLeaky)
				r.RSS = result.RSS{Source: "unknown", Note: "remote target without /metrics"}
				r.MemStats.GCCPUFractionScope = "lifetime"
				r.MemStats.GCPausesCovered = 0
				return r
			},
			want: map[string]float64{
				MetricHeapAfterGC: float64(last.LiveBytes),
				MetricHeapObjects: float64(last.LiveObjects),
				MetricGoroutines:  float64(last.Goroutines),
				MetricAllocRate:   leaky.MemStats.AllocatedBytesPerSecond,
			},
		},
		{
			name: "a cgroup without a memory limit: no limit series",
			result: func() *result.Run {
				r := readFixture(t, fixtureLeaky)
				r.RSS.Cgroup = &result.Cgroup{Version: 2, Path: "/", Unlimited: true}
				return r
			},
			want: map[string]float64{
				MetricRSS:         float64(leaky.RSS.RSSBytes),
				MetricHeapAfterGC: float64(last.LiveBytes),
				MetricHeapObjects: float64(last.LiveObjects),
				MetricGoroutines:  float64(last.Goroutines),
				MetricAllocRate:   leaky.MemStats.AllocatedBytesPerSecond,
				MetricGCCPU:       leaky.MemStats.GCCPUFraction,
				MetricPauseP99:    leaky.MemStats.GCPauseP99Seconds,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]float64{}
			for _, v := range SeriesOf(tt.result()) {
				got[v.Metric] = v.Value
			}
			for name, want := range tt.want {
				if g, ok := got[name]; !ok || g != want {
					t.Errorf("%s: %v (present %v), want %v", name, g, ok, want)
				}
			}
			for name, g := range got {
				if _, ok := tt.want[name]; !ok {
					t.Errorf("%s: %v, want no point", name, g)
				}
			}
		})
	}
}

func TestMetricUnit(t *testing.T) {
	for _, name := range Metrics() {
		if u, ok := MetricUnit(name); !ok || u == "" {
			t.Errorf("MetricUnit(%s) = %q, %v", name, u, ok)
		}
	}
	if _, ok := MetricUnit("heap"); ok {
		t.Error("MetricUnit(heap): known")
	}
}
