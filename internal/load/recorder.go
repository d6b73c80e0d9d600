package load

import (
	"math"
	"math/bits"
	"slices"
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

// Bins of the durations' histograms: HdrHistogram's layout for values from
// 1 to histogramMax at histogramDigits, so that a value recorded in a bin
// here lands in the same bin of an hdrhistogram.Histogram. Bucket 0 holds
// the values below subBuckets one by one; bucket b > 0 the values below
// subBuckets<<b in steps of 1<<b, half of its sub-buckets.
const (
	subBucketBits = 11 // 2·10^histogramDigits < 1<<subBucketBits
	subBuckets    = 1 << subBucketBits
	halfBuckets   = subBuckets / 2
)

// bucketCount is the number of buckets histogramMax needs.
var bucketCount = bits.Len64(uint64(histogramMax)|(subBuckets-1)) - subBucketBits + 1

// binChunk is how many bins of a bucket are allocated together, when the
// first of them is used: durations cluster, so a histogram per connection
// holds a few chunks rather than whole buckets.
const binChunk = 64

// durations is a high-dynamic-range histogram of durations in nanoseconds,
// with exact count, sum, min and max beside it. Its bins are allocated
// binChunk at a time when first used, so that one per connection stays
// small; quantiles come from an HdrHistogram filled from them.
type durations struct {
	buckets  [][]*[binChunk]uint64 // by bucket, then by chunk; nil until used
	n        uint64
	sum      float64
	min, max time.Duration

	chunks int // allocated

	h     *hdrhistogram.Histogram // the bins as an HdrHistogram, when fresh
	fresh bool
}

func newDurations() *durations {
	return &durations{buckets: make([][]*[binChunk]uint64, bucketCount)}
}

// bin returns the bucket and the index in it of v, 0 ≤ v ≤ histogramMax.
func bin(v uint64) (b, i int) {
	b = bits.Len64(v|(subBuckets-1)) - subBucketBits
	i = int(v >> b)
	if b > 0 {
		i -= halfBuckets
	}
	return b, i
}

// binValue returns the smallest value of bin i of bucket b.
func binValue(b, i int) int64 {
	if b > 0 {
		i += halfBuckets
	}
	return int64(i) << b
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
	b, i := bin(uint64(min(v, histogramMax)))
	d.chunk(b, i/binChunk)[i%binChunk]++
	d.fresh = false
}

// chunk returns chunk j of bucket b, allocating it when needed.
func (d *durations) chunk(b, j int) *[binChunk]uint64 {
	row := d.buckets[b]
	if row == nil {
		row = make([]*[binChunk]uint64, (subBuckets-halfBuckets*min(b, 1))/binChunk)
		d.buckets[b] = row
	}
	c := row[j]
	if c == nil {
		c = new([binChunk]uint64)
		row[j] = c
		d.chunks++
	}
	return c
}

// merge adds the durations of o.
func (d *durations) merge(o *durations) {
	if o.n == 0 {
		return
	}
	if d.n == 0 || o.min < d.min {
		d.min = o.min
	}
	d.max = max(d.max, o.max)
	d.n += o.n
	d.sum += o.sum
	for b, row := range o.buckets {
		for j, c := range row {
			if c == nil {
				continue
			}
			dc := d.chunk(b, j)
			for i, n := range c {
				dc[i] += n
			}
		}
	}
	d.fresh = false
}

// hdr returns the bins as an HdrHistogram.
func (d *durations) hdr() *hdrhistogram.Histogram {
	if d.fresh {
		return d.h
	}
	if d.h == nil {
		d.h = hdrhistogram.New(1, int64(histogramMax), histogramDigits)
	} else {
		d.h.Reset()
	}
	for b, row := range d.buckets {
		for j, c := range row {
			if c == nil {
				continue
			}
			for i, n := range c {
				if n > 0 {
					// In range by construction, so RecordValues cannot
					// fail.
					_ = d.h.RecordValues(binValue(b, j*binChunk+i), int64(n))
				}
			}
		}
	}
	d.fresh = true
	return d.h
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
	v := time.Duration(d.hdr().ValueAtQuantile(q * 100))
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
	for _, row := range d.buckets {
		for _, c := range row {
			if c != nil {
				clear(c[:])
			}
		}
	}
	d.n, d.sum, d.min, d.max = 0, 0, 0, 0
	d.fresh = false
}

// recorder accumulates the outcomes of a run's requests. Each worker
// records into a shard of its own, under a lock no other worker takes, and
// the shards are merged when the run's result or progress is read: no lock
// or counter is shared between connections per request. With a per-second
// series, a shard hands each second's latencies to the recorder when its
// worker moves on to the next second, once a second at most.
type recorder struct {
	start  time.Time
	series bool
	// open is whether requests have an intended time apart from their send
	// time (the open model): only then are lag and in-flight counts
	// recorded.
	open bool

	// mu guards the shards list and the progress snapshots; a snapshot
	// takes each shard's lock under it. The shards take spillMu under
	// their own lock, never mu.
	mu                 sync.Mutex
	shards             []*shard
	common             *shard        // the open model's
	lastDone, lastErrs uint64        // at the previous progress snapshot
	lastAt             time.Duration // of the previous progress snapshot

	spillMu            sync.Mutex
	secLatency         []*durations // by second, of the completions in it
	spillLat, spillLag *durations   // what shards handed over to stay small

	// inFlight and maxFlight count the open model's outstanding requests,
	// whose pacer hands each out through shared state anyway.
	inFlight, maxFlight atomic.Int64
}

func newRecorder(start time.Time, series, open bool) *recorder {
	return &recorder{start: start, series: series, open: open, spillLat: newDurations(), spillLag: newDurations()}
}

// maxShardChunks bounds the bin chunks of a shard's histograms: past it,
// the shard hands its histograms to the recorder and starts afresh, so that
// a worker's memory stays bounded however spread its durations are.
const maxShardChunks = 128

// shard is one worker's part of a recorder.
type shard struct {
	r *recorder

	mu               sync.Mutex
	done, errs       uint64
	completed        uint64
	status           statusCounts
	kinds            [numKinds]uint64
	latency, lag     *durations
	http1, http2     bool
	lagSinceProgress time.Duration
	flight           int       // requests outstanding
	first, last      time.Time // first send and last end, for the closed model's peak in flight
	// spans are the first sends and last ends of the connections of a
	// shard that records for several (an event loop's), which sets them;
	// first and last are then unused.
	spans      [][2]time.Time
	multi      bool
	seconds    []Second
	secLatency *durations // of the completions in second cur
	cur        int
}

// loopShard returns a new shard for the connections of one event loop.
func (r *recorder) loopShard() *shard {
	s := r.newShard()
	s.multi = true
	r.mu.Lock()
	r.shards = append(r.shards, s)
	r.mu.Unlock()
	return s
}

// span adds the first send and last end of one of a loop's connections.
func (s *shard) span(first, last time.Time) {
	if first.IsZero() {
		return
	}
	s.mu.Lock()
	s.spans = append(s.spans, [2]time.Time{first, last})
	s.mu.Unlock()
}

// shard returns a new shard for one worker; in the open model, the one
// shard all its workers share. The open model's pacer hands out every
// request through shared state anyway, and its lags, spread over many
// bins, would make a shard per worker large.
func (r *recorder) shard() *shard {
	if r.open {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.common == nil {
			r.common = r.newShard()
			r.shards = append(r.shards, r.common)
		}
		return r.common
	}
	s := r.newShard()
	r.mu.Lock()
	r.shards = append(r.shards, s)
	r.mu.Unlock()
	return s
}

func (r *recorder) newShard() *shard {
	s := &shard{r: r, latency: newDurations()}
	if r.open {
		s.lag = newDurations()
	}
	if r.series {
		s.secLatency = newDurations()
	}
	return s
}

// begin counts a request sent at sent.
func (s *shard) begin(sent time.Time) {
	s.mu.Lock()
	s.flight++
	if s.first.IsZero() && !s.multi {
		s.first = sent
	}
	s.mu.Unlock()
	if !s.r.open {
		return
	}
	r := s.r
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
func (s *shard) record(due, sent, end time.Time, status int, h2 bool, kind errorKind) {
	latency := end.Sub(due)
	lag := sent.Sub(due)
	if s.r.open {
		s.r.inFlight.Add(-1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flight--
	if !s.multi {
		s.last = end
	}
	s.done++
	if s.lag != nil {
		s.lag.record(lag)
		s.lagSinceProgress = max(s.lagSinceProgress, lag)
	}
	if kind.hasLatency() {
		s.latency.record(latency)
	}
	if s.latency.chunks+s.lagChunks() > maxShardChunks {
		s.spill()
	}
	if kind == kindNone {
		s.completed++
		s.status.add(status)
		switch {
		case status >= 500:
			kind = kindStatus5xx
		case status >= 400:
			kind = kindStatus4xx
		}
		if h2 {
			s.http2 = true
		} else {
			s.http1 = true
		}
	}
	if kind != kindNone {
		s.errs++
		s.kinds[kind]++
	}
	if s.secLatency != nil {
		s.recordSecond(sent, end, latency, lag, kind)
	}
}

func (s *shard) lagChunks() int {
	if s.lag == nil {
		return 0
	}
	return s.lag.chunks
}

// spill hands the shard's histograms to the recorder and frees them.
func (s *shard) spill() {
	r := s.r
	r.spillMu.Lock()
	r.spillLat.merge(s.latency)
	if s.lag != nil {
		r.spillLag.merge(s.lag)
	}
	r.spillMu.Unlock()
	s.latency = newDurations()
	if s.lag != nil {
		s.lag = newDurations()
	}
}

// recordSecond adds a request to the per-second series: sent in the second
// it was sent, everything else in the second it ended.
func (s *shard) recordSecond(sent, end time.Time, latency, lag time.Duration, kind errorKind) {
	i := s.second(sent)
	s.seconds[i].Sent++
	e := s.second(end)
	sec := &s.seconds[e]
	sec.Done++
	sec.MaxLag = max(sec.MaxLag, lag)
	if kind != kindNone {
		sec.Errors++
	}
	if kind.hasLatency() {
		// A worker's requests end in time order; in the open model, whose
		// workers share a shard, one that ended a hair before a later one
		// took the lock goes into the open second.
		if e > s.cur {
			s.flushSecond()
			s.cur = e
		}
		s.secLatency.record(latency)
	}
}

// second returns the index of the second t falls in, growing the series to
// hold it.
func (s *shard) second(t time.Time) int {
	i := max(int(t.Sub(s.r.start)/time.Second), 0)
	for len(s.seconds) <= i {
		s.seconds = append(s.seconds, Second{})
	}
	return i
}

// flushSecond hands the latencies of second cur to the recorder.
func (s *shard) flushSecond() {
	if s.secLatency.n == 0 {
		return
	}
	r := s.r
	r.spillMu.Lock()
	for len(r.secLatency) <= s.cur {
		r.secLatency = append(r.secLatency, nil)
	}
	if r.secLatency[s.cur] == nil {
		r.secLatency[s.cur] = newDurations()
	}
	r.secLatency[s.cur].merge(s.secLatency)
	r.spillMu.Unlock()
	s.secLatency.reset()
}

// progress returns the counts for a progress snapshot at elapsed.
func (r *recorder) progress(elapsed time.Duration) Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := Progress{Elapsed: elapsed}
	for _, s := range r.shards {
		s.mu.Lock()
		p.Requests += s.done
		p.Errors += s.errs
		if !r.open {
			p.InFlight += s.flight
		}
		p.Lag = max(p.Lag, s.lagSinceProgress)
		s.lagSinceProgress = 0
		s.mu.Unlock()
	}
	if r.open {
		p.InFlight = int(r.inFlight.Load())
	}
	if dt := elapsed - r.lastAt; dt > 0 {
		p.Rate = float64(p.Requests-r.lastDone) / dt.Seconds()
	}
	r.lastDone, r.lastErrs, r.lastAt = p.Requests, p.Errors, elapsed
	return p
}

// fill copies the totals into res. The workers have finished.
func (r *recorder) fill(res *Result) {
	r.mu.Lock()
	shards := r.shards
	r.mu.Unlock()
	latency, lag := newDurations(), newDurations()
	var status [1000]uint64
	var kinds [numKinds]uint64
	var http1, http2 bool
	var seconds []Second
	for _, s := range shards {
		s.mu.Lock()
		res.Requests += s.done
		res.Errors += s.errs
		res.Completed += s.completed
		latency.merge(s.latency)
		if s.lag != nil {
			lag.merge(s.lag)
		}
		s.status.each(func(code int, n uint64) { status[code] += n })
		for k, n := range s.kinds {
			kinds[k] += n
		}
		http1, http2 = http1 || s.http1, http2 || s.http2
		if s.secLatency != nil {
			s.flushSecond()
			for len(seconds) < len(s.seconds) {
				seconds = append(seconds, Second{})
			}
			for i, sec := range s.seconds {
				seconds[i].Sent += sec.Sent
				seconds[i].Done += sec.Done
				seconds[i].Errors += sec.Errors
				seconds[i].MaxLag = max(seconds[i].MaxLag, sec.MaxLag)
			}
		}
		s.mu.Unlock()
	}
	r.spillMu.Lock()
	latency.merge(r.spillLat)
	lag.merge(r.spillLag)
	secLatency := r.secLatency
	r.spillMu.Unlock()
	res.Latency = latency.summary()
	res.Lag = LagSummary{Mean: lag.mean(), P99: lag.quantile(0.99), Max: lag.max}
	res.PeakInFlight = r.peakInFlight(shards)
	res.StatusCodes = map[int]uint64{}
	for code, n := range status {
		if n > 0 {
			res.StatusCodes[code] = n
		}
	}
	res.ErrorKinds = map[string]uint64{}
	for k, n := range kinds {
		if n > 0 {
			res.ErrorKinds[kindNames[k]] = n
		}
	}
	switch {
	case http1 && http2:
		res.Protocol = "HTTP/1.1 and HTTP/2"
	case http2:
		res.Protocol = "HTTP/2"
	case http1:
		res.Protocol = "HTTP/1.1"
	}
	if r.series {
		for i := range seconds {
			if i < len(secLatency) && secLatency[i] != nil {
				d := secLatency[i]
				seconds[i].P50, seconds[i].P90, seconds[i].P99, seconds[i].Max = d.quantile(0.5), d.quantile(0.9), d.quantile(0.99), d.max
			}
		}
		res.Series = seconds
	}
}

// peakInFlight returns the most requests outstanding at once. In the closed
// model, a worker has a request outstanding from its first send to its last
// end but for the instants between two requests, so the peak is the most
// of those spans that overlap.
func (r *recorder) peakInFlight(shards []*shard) int {
	if r.open {
		return int(r.maxFlight.Load())
	}
	type event struct {
		at    time.Time
		delta int
	}
	var events []event
	for _, s := range shards {
		if !s.first.IsZero() {
			events = append(events, event{s.first, 1}, event{s.last, -1})
		}
		for _, sp := range s.spans {
			events = append(events, event{sp[0], 1}, event{sp[1], -1})
		}
	}
	// Ends before starts at the same instant: spans that only touch do not
	// overlap.
	slices.SortFunc(events, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	n, peak := 0, 0
	for _, e := range events {
		n += e.delta
		peak = max(peak, n)
	}
	return peak
}

// statusCounts counts responses by status code: the first few codes in
// place, any more in a map.
type statusCounts struct {
	codes [4]uint16 // code + 1; 0 for none
	n     [4]uint64
	more  map[int]uint64
}

// add counts one response of status code; codes are three digits, others
// are not counted.
func (c *statusCounts) add(code int) {
	if uint(code) > 999 {
		return
	}
	for i, k := range c.codes {
		switch int(k) {
		case code + 1:
			c.n[i]++
			return
		case 0:
			c.codes[i] = uint16(code + 1)
			c.n[i] = 1
			return
		}
	}
	if c.more == nil {
		c.more = map[int]uint64{}
	}
	c.more[code]++
}

// each calls f with each code counted and its count.
func (c *statusCounts) each(f func(code int, n uint64)) {
	for i, k := range c.codes {
		if k != 0 {
			f(int(k)-1, c.n[i])
		}
	}
	for code, n := range c.more {
		f(code, n)
	}
}
