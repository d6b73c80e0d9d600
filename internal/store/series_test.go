package store

import (
	"strings"
	"testing"
	"time"

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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]float64{}
			for _, v := range seriesOf(tt.result()) {
				for _, m := range metrics {
					if m.id == v.metric {
						got[m.name] = v.value
					}
				}
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

func TestStore_Series(t *testing.T) {
	s := openStore(t)
	res := readFixture(t, fixtureLeaky)
	window := time.Duration(res.Window.DurationSeconds * float64(time.Second))
	for _, m := range []int{0, 15, 30} {
		commit(t, s, KindRun, "svc", fixtureLeaky, Entry{Time: at(m)})
	}
	commit(t, s, KindRun, "other", fixtureLeaky, Entry{Time: at(15)})
	tests := []struct {
		name     string
		target   string
		metric   string
		from, to time.Time
		want     []time.Time
	}{
		{"all", "svc", MetricHeapAfterGC, time.Time{}, time.Time{}, []time.Time{at(0).Add(window), at(15).Add(window), at(30).Add(window)}},
		{"from, inclusive", "svc", MetricRSS, at(15).Add(window), time.Time{}, []time.Time{at(15).Add(window), at(30).Add(window)}},
		{"to, inclusive", "svc", MetricGoroutines, time.Time{}, at(15).Add(window), []time.Time{at(0).Add(window), at(15).Add(window)}},
		{"between", "svc", MetricPauseP99, at(10), at(20), []time.Time{at(15).Add(window)}},
		{"other target", "other", MetricGCCPU, time.Time{}, time.Time{}, []time.Time{at(15).Add(window)}},
		{"unknown target", "nobody", MetricRSS, time.Time{}, time.Time{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pts, err := s.Series(tt.target, tt.metric, tt.from, tt.to)
			if err != nil {
				t.Fatal(err)
			}
			if pts == nil || len(pts) != len(tt.want) {
				t.Fatalf("Series: %v, want points at %v", pts, tt.want)
			}
			wantValue, _ := metricByName(tt.metric)
			v, _ := wantValue.value(res)
			for i, p := range pts {
				if !p.Time.Equal(tt.want[i]) || p.Value != v {
					t.Errorf("point %d: %v at %s, want %v at %s", i, p.Value, p.Time, v, tt.want[i])
				}
			}
		})
	}
	if _, err := s.Series("svc", "heap", time.Time{}, time.Time{}); err == nil || !strings.Contains(err.Error(), MetricHeapAfterGC) {
		t.Errorf("Series of an unknown metric: %v, want an error listing the metrics", err)
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
