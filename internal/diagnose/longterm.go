package diagnose

import (
	"fmt"
	"math"
	"time"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/result"
)

// Long-term growth: heap after GC over the stored runs of one target,
// hours to days apart. One window sees a leak that grows in seconds; a
// leak of a few kilobytes a request at a quiet hour only shows over days,
// and a restart hides it again.

// LongTermPoint is one stored run's heap after GC.
type LongTermPoint struct {
	Time  time.Time
	Bytes float64
}

// Long-term growth thresholds: enough runs over enough time, a line that
// fits, and growth that matters.
const (
	longTermMinPoints = 6
	longTermMinSpan   = time.Hour
	longTermMinR2     = 0.8
	// longTermMinGrowth is the growth over the span, as a share of the
	// first point and in bytes, below which a slope is noise.
	longTermMinGrowth      = 0.2
	longTermMinGrowthBytes = 4 << 20
)

// LongTermGrowth fits a line to heap after GC over the stored runs since
// the target last started (a point below half of the one before it is a
// restart: the series starts again there) and reports steady growth, with
// the time until limit (bytes; 0 when unknown) at that rate. It returns no
// finding for fewer than six points, less than an hour, a poor fit or
// growth under 20 % and 4 MiB.
func LongTermGrowth(points []LongTermPoint, limit float64) (result.Finding, bool) {
	start := 0
	for i := 1; i < len(points); i++ {
		if points[i].Bytes < points[i-1].Bytes/2 {
			start = i
		}
	}
	ps := points[start:]
	if len(ps) < longTermMinPoints {
		return result.Finding{}, false
	}
	span := ps[len(ps)-1].Time.Sub(ps[0].Time)
	if span < longTermMinSpan {
		return result.Finding{}, false
	}
	xs, ys := make([]float64, len(ps)), make([]float64, len(ps))
	for i, p := range ps {
		xs[i] = p.Time.Sub(ps[0].Time).Hours()
		ys[i] = p.Bytes
	}
	slope, r2 := FitLine(xs, ys) // bytes per hour
	first, last := ys[0], ys[len(ys)-1]
	growth := slope * span.Hours()
	if slope <= 0 || r2 < longTermMinR2 || growth < longTermMinGrowthBytes || growth < longTermMinGrowth*first {
		return result.Finding{}, false
	}
	f := result.Finding{
		ID:       "leak.long_term",
		Severity: Medium.String(),
		Title: fmt.Sprintf("heap after GC grows %s an hour over %s (%s → %s, R² %.2f)",
			humanize.Bytes(slope), humanize.Hours(span.Hours()), humanize.Bytes(first), humanize.Bytes(last), r2),
		Evidence: map[string]float64{
			"slope_bytes_per_hour": slope,
			"r2":                   r2,
			"span_hours":           span.Hours(),
			"points":               float64(len(ps)),
			"first_bytes":          first,
			"last_bytes":           last,
		},
		Fix: "compare the first and the last stored run of this span (heapscope compare FIRST LAST) " +
			"to see which sites hold the growth, or diagnose the stored heap profiles together " +
			"(heapscope diagnose --data DIR --target T --since …)",
		Confidence: r2,
	}
	if limit > 0 && last < limit {
		hours := (limit - last) / slope
		f.Evidence["hours_to_limit"] = hours
		f.Evidence["limit_bytes"] = limit
		f.Title += fmt.Sprintf("; at this rate it reaches the %s limit in %s", humanize.Bytes(limit), humanize.Hours(hours))
		if hours < 24 {
			f.Severity = High.String()
		}
	}
	if math.IsNaN(f.Confidence) {
		f.Confidence = 0
	}
	return f, true
}
