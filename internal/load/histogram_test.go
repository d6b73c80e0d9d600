package load

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogram_Quantile(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 7))
	tests := []struct {
		name    string
		samples func() []time.Duration
	}{
		{name: "one sample", samples: func() []time.Duration { return []time.Duration{1234567} }},
		{name: "constant", samples: func() []time.Duration { return repeat(3*time.Millisecond, 1000) }},
		{name: "exact small values", samples: func() []time.Duration {
			var s []time.Duration
			for v := range 64 {
				s = append(s, time.Duration(v))
			}
			return s
		}},
		{name: "uniform 1ns to 1s", samples: func() []time.Duration {
			s := make([]time.Duration, 100000)
			for i := range s {
				s[i] = time.Duration(1 + rnd.Int64N(int64(time.Second)))
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
		{name: "bimodal 1ms and 1s", samples: func() []time.Duration {
			return append(repeat(time.Millisecond, 9900), repeat(time.Second, 100)...)
		}},
		{name: "pareto tail", samples: func() []time.Duration {
			s := make([]time.Duration, 50000)
			for i := range s {
				s[i] = time.Duration(float64(100*time.Microsecond) / math.Pow(1-rnd.Float64(), 1/1.2))
			}
			return s
		}},
		{name: "powers of two edges", samples: func() []time.Duration {
			var s []time.Duration
			for e := range 40 {
				s = append(s, 1<<e-1, 1<<e, 1<<e+1)
			}
			return s
		}},
	}
	quantiles := []float64{0, 0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 1}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples := tt.samples()
			var h Histogram
			for _, s := range samples {
				h.Record(s)
			}
			sorted := slices.Clone(samples)
			slices.Sort(sorted)
			if got := h.Count(); got != uint64(len(samples)) {
				t.Errorf("Count() = %d, want %d", got, len(samples))
			}
			for _, q := range quantiles {
				want := exactQuantile(sorted, q)
				got := h.Quantile(q)
				if !within(got, want, HistogramMaxRelativeError) {
					t.Errorf("Quantile(%g) = %d, want %d within %.2f%%", q, got, want, 100*HistogramMaxRelativeError)
				}
			}
			s := h.Summary()
			var sum float64
			for _, v := range samples {
				sum += float64(v)
			}
			if s.Min != sorted[0] || s.Max != sorted[len(sorted)-1] {
				t.Errorf("Summary min, max = %d, %d, want %d, %d", s.Min, s.Max, sorted[0], sorted[len(sorted)-1])
			}
			if want := time.Duration(math.Round(sum / float64(len(samples)))); s.Mean != want {
				t.Errorf("Summary mean = %d, want %d", s.Mean, want)
			}
			if s.P50 != h.Quantile(0.5) || s.P90 != h.Quantile(0.9) || s.P99 != h.Quantile(0.99) || s.P999 != h.Quantile(0.999) {
				t.Errorf("Summary percentiles %+v differ from Quantile", s)
			}
		})
	}
}

func TestHistogram_edges(t *testing.T) {
	tests := []struct {
		name    string
		samples []time.Duration
		q       float64
		want    time.Duration
	}{
		{name: "empty", q: 0.5, want: 0},
		{name: "negative counts as zero", samples: []time.Duration{-5}, q: 1, want: 0},
		{name: "above range keeps exact max", samples: []time.Duration{time.Hour}, q: 1, want: time.Hour},
		{name: "above range median clamped to min", samples: []time.Duration{time.Hour, 2 * time.Hour}, q: 0.5, want: time.Hour},
		{name: "q above one is max", samples: []time.Duration{1, 2, 3}, q: 7, want: 3},
		{name: "q below zero is min", samples: []time.Duration{1, 2, 3}, q: -1, want: 1},
		{name: "NaN", samples: []time.Duration{1, 2, 3}, q: math.NaN(), want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Histogram
			for _, s := range tt.samples {
				h.Record(s)
			}
			if got := h.Quantile(tt.q); got != tt.want {
				t.Errorf("Quantile(%g) = %d, want %d", tt.q, got, tt.want)
			}
		})
	}
	var h Histogram
	if got := h.Summary(); got != (LatencySummary{}) {
		t.Errorf("Summary of an empty histogram = %+v, want zero", got)
	}
}

// TestHistogram_buckets checks the bucket layout on every bucket boundary:
// indexes are contiguous and every value is within the stated error of its
// bucket's midpoint.
func TestHistogram_buckets(t *testing.T) {
	prev := -1
	for v := uint64(0); v < 1<<maxExp; v = next(v) {
		for _, x := range []uint64{v, v + 1, v*2 - 1} {
			if x == 0 || x >= 1<<maxExp {
				continue
			}
			i := bucketOf(x)
			if mid := bucketMid(i); !within(mid, time.Duration(x), HistogramMaxRelativeError) {
				t.Fatalf("value %d in bucket %d with midpoint %d: error above %g", x, i, mid, HistogramMaxRelativeError)
			}
		}
		i := bucketOf(v)
		if i != prev && i != prev+1 {
			t.Fatalf("value %d in bucket %d after bucket %d", v, i, prev)
		}
		prev = i
	}
	if prev != numBuckets-1 {
		t.Errorf("last bucket reached = %d, want %d", prev, numBuckets-1)
	}
	if got := bucketOf(math.MaxUint64); got != numBuckets-1 {
		t.Errorf("bucketOf(max) = %d, want %d", got, numBuckets-1)
	}
}

// next returns the smallest value above v that may start a new bucket.
func next(v uint64) uint64 {
	if v < subBuckets*2 {
		return v + 1
	}
	return v + 1<<(bits.Len64(v)-1-subBits)
}

func exactQuantile(sorted []time.Duration, q float64) time.Duration {
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func within(got, want time.Duration, rel float64) bool {
	return math.Abs(float64(got-want)) <= rel*float64(want)
}

func repeat(d time.Duration, n int) []time.Duration {
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = d
	}
	return s
}

func BenchmarkHistogram_Record(b *testing.B) {
	var h Histogram
	rnd := rand.New(rand.NewPCG(1, 2))
	values := make([]time.Duration, 1024)
	for i := range values {
		values[i] = time.Duration(rnd.ExpFloat64() * float64(time.Millisecond))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.Record(values[i&1023])
		i++
	}
}
