package load

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestDurations_quantile checks the percentiles of the HDR histogram against
// the exact samples of known distributions: each within
// HistogramMaxRelativeError of the sample of the same rank (the rank
// HdrHistogram uses: round(q·n), at least 1).
func TestDurations_quantile(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 7))
	tests := []struct {
		name    string
		samples func() []time.Duration
	}{
		{name: "one sample", samples: func() []time.Duration { return []time.Duration{1234567} }},
		{name: "constant", samples: func() []time.Duration { return repeat(3*time.Millisecond, 1000) }},
		{name: "small exact values", samples: func() []time.Duration {
			s := make([]time.Duration, 2048)
			for i := range s {
				s[i] = time.Duration(i)
			}
			return s
		}},
		{name: "uniform 1µs to 1s", samples: func() []time.Duration {
			s := make([]time.Duration, 100000)
			for i := range s {
				s[i] = time.Microsecond + time.Duration(rnd.Int64N(int64(time.Second)))
			}
			return s
		}},
		{name: "exponential mean 5ms", samples: func() []time.Duration {
			s := make([]time.Duration, 100000)
			for i := range s {
				s[i] = time.Duration(rnd.ExpFloat64() * float64(5*time.Millisecond))
			}
			return s
		}},
		{name: "bimodal 100µs and 1s", samples: func() []time.Duration {
			return append(repeat(100*time.Microsecond, 9900), repeat(time.Second, 100)...)
		}},
		{name: "pareto tail", samples: func() []time.Duration {
			s := make([]time.Duration, 50000)
			for i := range s {
				s[i] = time.Duration(float64(100*time.Microsecond) / math.Pow(1-rnd.Float64(), 1/1.2))
			}
			return s
		}},
	}
	quantiles := []float64{0, 0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 1}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples := tt.samples()
			d := newDurations()
			var sum float64
			for _, s := range samples {
				d.record(s)
				sum += float64(s)
			}
			sorted := slices.Clone(samples)
			slices.Sort(sorted)
			n := len(sorted)
			for _, q := range quantiles {
				rank := min(max(int(q*float64(n)+0.5), 1), n)
				exact := sorted[rank-1]
				if got := d.quantile(q); !within(got, exact, HistogramMaxRelativeError) {
					t.Errorf("quantile(%g) = %s, want %s ± %g", q, got, exact, HistogramMaxRelativeError)
				}
			}
			s := d.summary()
			if s.Min != sorted[0] || s.Max != sorted[n-1] || s.Mean != time.Duration(math.Round(sum/float64(n))) {
				t.Errorf("min, mean, max = %s, %s, %s; want the exact %s, %s, %s", s.Min, s.Mean, s.Max,
					sorted[0], time.Duration(math.Round(sum/float64(n))), sorted[n-1])
			}
		})
	}
}

func TestDurations_outOfRange(t *testing.T) {
	d := newDurations()
	d.record(-time.Second)
	d.record(48 * time.Hour)
	if d.min != 0 || d.max != 48*time.Hour || d.n != 2 {
		t.Errorf("min %s, max %s, n %d: want 0, 48h, 2", d.min, d.max, d.n)
	}
	if q := d.quantile(1); q != 48*time.Hour {
		t.Errorf("quantile(1) = %s, want the exact max 48h", q)
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = d
	}
	return s
}

func BenchmarkRecorder_record(b *testing.B) {
	start := time.Now()
	s := newRecorder(start, true, true).shard()
	due := start.Add(time.Millisecond)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		end := due.Add(time.Duration(i%5000) * time.Microsecond)
		s.begin(due)
		s.record(due, due, end, 200, false, kindNone)
	}
}

// TestRecorder_shardsMerge checks that what shards record, spilled to the
// recorder to stay small or not, adds up to one histogram of everything.
func TestRecorder_shardsMerge(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 3))
	tests := []struct {
		name   string
		open   bool // the open model: one shard for all, lags recorded
		shards int
		spread bool // durations from 1 µs to 10 s: many chunks, spills
	}{
		{name: "open, clustered", open: true, shards: 4},
		{name: "open, spread", open: true, shards: 4, spread: true},
		{name: "closed, one shard, spread", shards: 1, spread: true},
		{name: "closed, eight shards, spread", shards: 8, spread: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			r := newRecorder(start, false, tt.open)
			shards := make([]*shard, tt.shards)
			for i := range shards {
				shards[i] = r.shard()
			}
			all, allLag := newDurations(), newDurations()
			for i := range 50000 {
				d := time.Millisecond + time.Duration(rnd.Int64N(int64(time.Millisecond)))
				if tt.spread {
					d = time.Duration(float64(time.Microsecond) * math.Pow(10, 7*rnd.Float64()))
				}
				var lag time.Duration
				if tt.open {
					lag = d / 3
				}
				due := start.Add(time.Duration(i) * time.Microsecond)
				s := shards[i%len(shards)]
				s.begin(due.Add(lag))
				s.record(due, due.Add(lag), due.Add(d), 200, false, kindNone)
				all.record(d)
				allLag.record(lag)
			}
			var res Result
			r.fill(&res)
			if want := all.summary(); res.Latency != want {
				t.Errorf("latency %+v, want %+v", res.Latency, want)
			}
			if want := (LagSummary{Mean: allLag.mean(), P99: allLag.quantile(0.99), Max: allLag.max}); res.Lag != want {
				t.Errorf("lag %+v, want %+v", res.Lag, want)
			}
			if res.Requests != 50000 || res.StatusCodes[200] != 50000 {
				t.Errorf("requests %d, 200s %d; want 50000", res.Requests, res.StatusCodes[200])
			}
			for _, s := range shards {
				if c := s.latency.chunks + s.lagChunks(); c > maxShardChunks+2 {
					t.Errorf("a shard holds %d chunks, want at most about %d", c, maxShardChunks)
				}
			}
		})
	}
}
