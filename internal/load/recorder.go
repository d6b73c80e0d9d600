package load

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// histogramMax is the largest duration a histogram tells apart; longer ones
// are recorded as histogramMax (Max and Mean stay exact).
const histogramMax = 24 * time.Hour

// histogramDigits is the histograms' precision: quantiles are within
// 10^-3 of the recorded values.
const histogramDigits = 3

// HistogramMaxRelativeError bounds the relative error of the latency
// percentiles of a Result: each is within this fraction of the exact sample
// of its rank (or 1 ns of it, below 2 µs).
const HistogramMaxRelativeError = 1e-3

// durations is a high-dynamic-range histogram of durations in nanoseconds,
// with exact count, sum, min and max beside it.
type durations struct {
	h        *hdrhistogram.Histogram
	n        uint64
	sum      float64
	min, max time.Duration
}

func newDurations() *durations {
	return &durations{h: hdrhistogram.New(1, int64(histogramMax), histogramDigits)}
}

// record adds one duration; negative ones count as zero.
func (d *durations) record(v time.Duration) {
	v = max(v, 0)
	if d.n == 0 || v < d.min {
		d.min = v
	}
	d.max = max(d.max, v)
	d.n++
	d.sum += float64(v)
	// In range by construction, so RecordValue cannot fail.
	_ = d.h.RecordValue(int64(min(v, histogramMax)))
}

// quantile returns the q-quantile (0 ≤ q ≤ 1), clamped to [min, max]: the
// exact min and max for 0 and 1.
func (d *durations) quantile(q float64) time.Duration {
	switch {
	case d.n == 0:
		return 0
	case q <= 0:
		return d.min
	case q >= 1:
		return d.max
	}
	v := time.Duration(d.h.ValueAtQuantile(q * 100))
	return min(max(v, d.min), d.max)
}

func (d *durations) mean() time.Duration {
	if d.n == 0 {
		return 0
	}
	return time.Duration(math.Round(d.sum / float64(d.n)))
}

func (d *durations) summary() LatencySummary {
	return LatencySummary{
		Min: d.min, Mean: d.mean(),
		P50: d.quantile(0.50), P90: d.quantile(0.90), P99: d.quantile(0.99), P999: d.quantile(0.999),
		Max: d.max,
	}
}

func (d *durations) reset() {
	d.h.Reset()
	d.n, d.sum, d.min, d.max = 0, 0, 0, 0
}

// recorder accumulates the outcomes of a run's requests. Every request is
// recorded once, when it ends, under one mutex: at the rates one machine
// sends, the lock is held well under 1 % of the time.
type recorder struct {
	start  time.Time
	series bool

	mu                 sync.Mutex
	done, errs, ok     uint64
	completed          uint64
	status             [1000]uint64 // by code; codes are three digits
	kinds              [numKinds]uint64
	latency, lag       *durations
	http1, http2       bool
	lastDone, lastErrs uint64        // at the previous progress snapshot
	lastAt             time.Duration // of the previous progress snapshot
	lagSinceProgress   time.Duration
	seconds            []Second
	secLatency         *durations // of the completions in second cur
	cur                int

	inFlight, maxFlight atomic.Int64
}

func newRecorder(start time.Time, series bool) *recorder {
	r := &recorder{start: start, series: series, latency: newDurations(), lag: newDurations()}
	if series {
		r.secLatency = newDurations()
	}
	return r
}

// begin counts a request sent.
func (r *recorder) begin() {
	n := r.inFlight.Add(1)
	for {
		m := r.maxFlight.Load()
		if n <= m || r.maxFlight.CompareAndSwap(m, n) {
			return
		}
	}
}

// record counts a request that ended: due is its intended send time (the
// send time itself in the closed model), sent when it was sent, end when
// its response was read or it failed; status is its response's status when
// kind is kindNone.
func (r *recorder) record(due, sent, end time.Time, status int, h2 bool, kind errorKind) {
	latency := end.Sub(due)
	lag := sent.Sub(due)
	r.inFlight.Add(-1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done++
	r.lag.record(lag)
	r.lagSinceProgress = max(r.lagSinceProgress, lag)
	if kind.hasLatency() {
		r.latency.record(latency)
	}
	if kind == kindNone {
		r.completed++
		if uint(status) < uint(len(r.status)) {
			r.status[status]++
		}
		switch {
		case status >= 500:
			kind = kindStatus5xx
		case status >= 400:
			kind = kindStatus4xx
		}
		if h2 {
			r.http2 = true
		} else {
			r.http1 = true
		}
	}
	if kind != kindNone {
		r.errs++
		r.kinds[kind]++
	}
	if r.series {
		r.recordSecond(sent, end, latency, lag, kind)
	}
}

// recordSecond adds a request to the per-second series: sent in the second
// it was sent, everything else in the second it ended.
func (r *recorder) recordSecond(sent, end time.Time, latency, lag time.Duration, kind errorKind) {
	s := r.second(sent)
	r.seconds[s].Sent++
	e := r.second(end)
	sec := &r.seconds[e]
	sec.Done++
	sec.MaxLag = max(sec.MaxLag, lag)
	if kind != kindNone {
		sec.Errors++
	}
	if kind.hasLatency() {
		// Completions usually come in time order; one that ended a hair
		// before a later one took the lock goes into the open second.
		if e > r.cur {
			r.closeSecond()
			r.cur = e
		}
		r.secLatency.record(latency)
	}
}

// second returns the index of the second t falls in, growing the series to
// hold it.
func (r *recorder) second(t time.Time) int {
	i := max(int(t.Sub(r.start)/time.Second), 0)
	for len(r.seconds) <= i {
		r.seconds = append(r.seconds, Second{})
	}
	return i
}

// closeSecond writes the latency percentiles of second cur.
func (r *recorder) closeSecond() {
	if r.secLatency.n == 0 {
		return
	}
	s := &r.seconds[r.cur]
	s.P50, s.P90, s.P99, s.Max = r.secLatency.quantile(0.5), r.secLatency.quantile(0.9), r.secLatency.quantile(0.99), r.secLatency.max
	r.secLatency.reset()
}

// progress returns the counts for a progress snapshot at elapsed.
func (r *recorder) progress(elapsed time.Duration) Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := Progress{Elapsed: elapsed, Requests: r.done, Errors: r.errs, InFlight: int(r.inFlight.Load()), Lag: r.lagSinceProgress}
	if dt := elapsed - r.lastAt; dt > 0 {
		p.Rate = float64(r.done-r.lastDone) / dt.Seconds()
	}
	r.lastDone, r.lastErrs, r.lastAt, r.lagSinceProgress = r.done, r.errs, elapsed, 0
	return p
}

// fill copies the totals into res.
func (r *recorder) fill(res *Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res.Requests = r.done
	res.Errors = r.errs
	res.Completed = r.completed
	res.Latency = r.latency.summary()
	res.Lag = LagSummary{Mean: r.lag.mean(), P99: r.lag.quantile(0.99), Max: r.lag.max}
	res.PeakInFlight = int(r.maxFlight.Load())
	res.StatusCodes = map[int]uint64{}
	for code, n := range r.status {
		if n > 0 {
			res.StatusCodes[code] = n
		}
	}
	res.ErrorKinds = map[string]uint64{}
	for k, n := range r.kinds {
		if n > 0 {
			res.ErrorKinds[kindNames[k]] = n
		}
	}
	switch {
	case r.http1 && r.http2:
		res.Protocol = "HTTP/1.1 and HTTP/2"
	case r.http2:
		res.Protocol = "HTTP/2"
	case r.http1:
		res.Protocol = "HTTP/1.1"
	}
	if r.series {
		r.closeSecond()
		res.Series = append([]Second(nil), r.seconds...)
	}
}
