package store

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/result"
)

// The series derived from every entry's result.json at ingest, by name;
// the package doc says where each comes from.
const (
	MetricRSS         = "rss"           // bytes
	MetricHeapAfterGC = "heap_after_gc" // bytes
	MetricHeapObjects = "heap_objects"  // objects
	MetricGoroutines  = "goroutines"    // goroutines
	MetricAllocRate   = "alloc_rate"    // bytes/s over the window
	MetricGCCPU       = "gc_cpu"        // fraction of CPU, over the window
	MetricPauseP99    = "pause_p99"     // seconds
	MetricLimit       = "memory_limit"  // bytes: the cgroup's limit
)

// metric is one series: its name, its id in the index's metrics table,
// its unit, and how a result gives its value (false: not measured).
type metric struct {
	name  string
	id    int
	unit  string
	value func(*result.Run) (float64, bool)
}

// metrics lists the series; the index's metrics table holds the same ids,
// names and units (a test keeps them equal).
var metrics = []metric{
	{MetricRSS, 1, "bytes", rssOf},
	{MetricHeapAfterGC, 2, "bytes", heapAfterGCOf},
	{MetricHeapObjects, 3, "objects", heapObjectsOf},
	{MetricGoroutines, 4, "goroutines", goroutinesOf},
	{MetricAllocRate, 5, "bytes/s", allocRateOf},
	{MetricGCCPU, 6, "fraction", gcCPUOf},
	{MetricPauseP99, 7, "seconds", pauseP99Of},
	{MetricLimit, 8, "bytes", limitOf},
}

// Metrics returns the names of the series, in a fixed order.
func Metrics() []string {
	out := make([]string, len(metrics))
	for i, m := range metrics {
		out[i] = m.name
	}
	return out
}

// MetricUnit returns the unit of a series: bytes, objects, goroutines,
// bytes/s, fraction or seconds; false for an unknown name.
func MetricUnit(name string) (string, bool) {
	m, ok := metricByName(name)
	return m.unit, ok
}

func metricByName(name string) (metric, bool) {
	for _, m := range metrics {
		if m.name == name {
			return m, true
		}
	}
	return metric{}, false
}

// MetricValue is one figure of a result, before it is a point.
type MetricValue struct {
	// ID numbers the metric in the index's metrics table.
	ID int
	// Metric is its name (Metrics).
	Metric string
	Value  float64
}

// SeriesOf returns the figures a result measured, one per metric at most.
// It reads result.json's values only, never a profile.
func SeriesOf(r *result.Run) []MetricValue {
	var out []MetricValue
	for _, m := range metrics {
		if v, ok := m.value(r); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			out = append(out, MetricValue{ID: m.id, Metric: m.name, Value: v})
		}
	}
	return out
}

// windowEnd is the time of an entry's points: its time plus its window.
func windowEnd(t time.Time, r *result.Run) time.Time {
	d := r.Window.DurationSeconds
	if d <= 0 || math.IsNaN(d) || math.IsInf(d, 0) {
		return t
	}
	return t.Add(time.Duration(d * float64(time.Second)))
}

func measured(r *result.Run, figure string) bool {
	_, unmeasured := r.UnmeasuredReason(figure)
	return !unmeasured
}

// lastSnapshot returns the window's last heap snapshot, or nil.
func lastSnapshot(r *result.Run) *result.HeapSnapshot {
	if r.HeapGrowth == nil || len(r.HeapGrowth.Snapshots) == 0 {
		return nil
	}
	return &r.HeapGrowth.Snapshots[len(r.HeapGrowth.Snapshots)-1]
}

func limitOf(r *result.Run) (float64, bool) {
	c := r.RSS.Cgroup
	if c == nil || c.Unlimited || c.LimitBytes == 0 {
		return 0, false
	}
	return float64(c.LimitBytes), true
}

func rssOf(r *result.Run) (float64, bool) {
	ok := r.RSS.RSSBytes > 0 && r.RSS.Source != "" && r.RSS.Source != "unknown" && measured(r, result.FigureRSS)
	return float64(r.RSS.RSSBytes), ok
}

func heapAfterGCOf(r *result.Run) (float64, bool) {
	if s := lastSnapshot(r); s != nil && s.LiveBytes > 0 {
		return float64(s.LiveBytes), true
	}
	return float64(r.MemStats.AllocBytes), r.MemStats.AllocBytes > 0 && measured(r, result.FigureWindowMemStats)
}

func heapObjectsOf(r *result.Run) (float64, bool) {
	if s := lastSnapshot(r); s != nil && s.LiveObjects > 0 {
		return float64(s.LiveObjects), true
	}
	return float64(r.MemStats.HeapObjects), r.MemStats.HeapObjects > 0 && measured(r, result.FigureWindowMemStats)
}

func goroutinesOf(r *result.Run) (float64, bool) {
	if r.HeapGrowth == nil {
		return 0, false
	}
	for i := len(r.HeapGrowth.Snapshots) - 1; i >= 0; i-- {
		if n := r.HeapGrowth.Snapshots[i].Goroutines; n > 0 {
			return float64(n), true
		}
	}
	return 0, false
}

func allocRateOf(r *result.Run) (float64, bool) {
	return r.MemStats.AllocatedBytesPerSecond, r.Window.DurationSeconds > 0 && measured(r, result.FigureWindowMemStats)
}

func gcCPUOf(r *result.Run) (float64, bool) {
	return r.MemStats.GCCPUFraction, r.MemStats.GCCPUFractionScope == "window" && measured(r, result.FigureWindowMemStats)
}

func pauseP99Of(r *result.Run) (float64, bool) {
	return r.MemStats.GCPauseP99Seconds, r.MemStats.GCPausesCovered > 0 && measured(r, result.FigureWindowMemStats)
}

// Series returns a target's points of one metric with times in [from, to],
// oldest first; a zero from or to leaves that end open. An unknown target
// has no points; an unknown metric is an error.
func (s *Embedded) Series(target, metricName string, from, to time.Time) ([]Point, error) {
	m, ok := metricByName(metricName)
	if !ok {
		return nil, fmt.Errorf("series %s of %s: no such metric: one of %s", metricName, target, strings.Join(Metrics(), ", "))
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if !from.IsZero() {
		lo = unixNano(from)
	}
	if !to.IsZero() {
		hi = unixNano(to)
	}
	rows, err := s.seriesStmt.Query(target, m.id, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("series %s of %s: %w", metricName, target, err)
	}
	defer rows.Close()
	out := []Point{}
	for rows.Next() {
		var ns int64
		var v float64
		if err := rows.Scan(&ns, &v); err != nil {
			return nil, fmt.Errorf("series %s of %s: %w", metricName, target, err)
		}
		out = append(out, Point{Time: fromNano(ns), Value: v})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("series %s of %s: %w", metricName, target, err)
	}
	return out, nil
}

// MetricID returns the number of a metric in the index, and whether the
// metric is known; an unknown one is an error that lists the metrics.
func MetricID(name string) (int, error) {
	m, ok := metricByName(name)
	if !ok {
		return 0, fmt.Errorf("no such metric: one of %s", strings.Join(Metrics(), ", "))
	}
	return m.id, nil
}
