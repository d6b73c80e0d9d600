package load

import (
	"math"
	"math/bits"
	"time"
)

// The histogram is log-linear, like HDR histograms: values below 2^subBits
// nanoseconds have a bucket each, and every power of two above is split into
// 2^subBits buckets of equal width. A bucket in [2^e, 2^(e+1)) is
// 2^(e-subBits) wide, so its midpoint is within 2^(e-subBits-1) ≤ v/2^(subBits+1)
// of any value v in it.
const (
	subBits    = 6
	subBuckets = 1 << subBits
	// maxExp is the exponent of the largest power of two recorded apart:
	// values of 2^maxExp ns (about 18 minutes) and more share the last bucket.
	maxExp     = 40
	numBuckets = (maxExp - subBits + 1) * subBuckets
)

// HistogramMaxRelativeError bounds the relative error of a Histogram
// quantile: the value reported is within this fraction of the exact sample
// of that rank, for durations below HistogramMaxValue.
const HistogramMaxRelativeError = 1.0 / (2 * subBuckets)

// HistogramMaxValue is the largest duration a Histogram buckets precisely.
// Longer durations share its last bucket; Max and Mean stay exact.
const HistogramMaxValue = time.Duration(1<<maxExp - 1)

// Histogram records durations in fixed log-linear buckets: quantiles are
// within HistogramMaxRelativeError of the exact values, whatever the number
// of samples, in about 18 KiB and without allocating. Min, Max, Mean and the
// count are exact. The zero value is an empty histogram ready to use. A
// Histogram is not safe for concurrent use.
type Histogram struct {
	counts   [numBuckets]uint64
	n        uint64
	sum      float64 // nanoseconds; float so that it cannot overflow
	min, max time.Duration
}

// Record adds one duration. Negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	d = max(d, 0)
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += float64(d)
	h.counts[bucketOf(uint64(d))]++
}

// Count returns the number of durations recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Quantile returns the q-quantile of the recorded durations: an estimate of
// the sample of rank ⌈q·n⌉ in ascending order (rank 1 for q = 0), within
// HistogramMaxRelativeError of it and clamped to [Min, Max]. q is clamped to
// [0, 1]. Quantile returns 0 for an empty histogram or a NaN q.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 || math.IsNaN(q) {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := min(max(uint64(math.Ceil(q*float64(h.n))), 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(max(bucketMid(i), h.min), h.max)
		}
	}
	return h.max
}

// Summary returns the minimum, mean, usual percentiles and maximum.
func (h *Histogram) Summary() LatencySummary {
	if h.n == 0 {
		return LatencySummary{}
	}
	return LatencySummary{
		Min:  h.min,
		Mean: time.Duration(math.Round(h.sum / float64(h.n))),
		P50:  h.Quantile(0.50),
		P90:  h.Quantile(0.90),
		P99:  h.Quantile(0.99),
		P999: h.Quantile(0.999),
		Max:  h.max,
	}
}

// bucketOf returns the index of the bucket that holds v nanoseconds.
func bucketOf(v uint64) int {
	if v < subBuckets {
		return int(v)
	}
	e := bits.Len64(v) - 1
	if e >= maxExp {
		return numBuckets - 1
	}
	sub := (v >> (e - subBits)) & (subBuckets - 1)
	return (e-subBits+1)*subBuckets + int(sub)
}

// bucketMid returns the midpoint of bucket i, in nanoseconds.
func bucketMid(i int) time.Duration {
	if i < subBuckets {
		return time.Duration(i)
	}
	e := i/subBuckets + subBits - 1
	sub := uint64(i % subBuckets)
	width := uint64(1) << (e - subBits)
	lo := uint64(1)<<e + sub*width
	return time.Duration(lo + width/2)
}
