package diagnose

import "math"

// trend is a least-squares line through a series and what tells steady
// growth from warm-up, noise and a sawtooth.
type trend struct {
	// slope is in units per minute; r2 the fit of the line.
	slope, r2 float64
	// rising is the share of steps between consecutive points that go
	// up.
	rising float64
	// lateSlope is the slope of the later half of the series.
	lateSlope float64
	// growth is the last value minus the first; span the highest value
	// minus the lowest, mean their average; maxRise and maxDrop the
	// largest step up and down.
	growth, span, mean float64
	maxRise, maxDrop   float64
	n                  int
}

// fitTrend fits the series ys at times xs (in minutes).
func fitTrend(xs, ys []float64) trend {
	t := trend{n: len(ys)}
	if len(ys) < 2 {
		return t
	}
	t.slope, t.r2 = FitLine(xs, ys)
	up := 0
	for i := 1; i < len(ys); i++ {
		if ys[i] > ys[i-1] {
			up++
		}
	}
	t.rising = float64(up) / float64(len(ys)-1)
	h := len(ys) / 2
	t.lateSlope, _ = FitLine(xs[h:], ys[h:])
	t.growth = ys[len(ys)-1] - ys[0]
	lo, hi, sum := ys[0], ys[0], 0.0
	for i, y := range ys {
		lo, hi, sum = min(lo, y), max(hi, y), sum+y
		if i > 0 {
			t.maxRise = max(t.maxRise, y-ys[i-1])
			t.maxDrop = max(t.maxDrop, ys[i-1]-y)
		}
	}
	t.span, t.mean = hi-lo, sum/float64(len(ys))
	return t
}

// FitLine returns the least-squares slope of ys over xs and R². A series
// without variance has R² 0; so does one whose xs do not vary.
func FitLine(xs, ys []float64) (slope, r2 float64) {
	n := float64(len(xs))
	if n < 2 {
		return 0, 0
	}
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/n, sy/n
	var sxx, sxy, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	if sxx == 0 {
		return 0, 0
	}
	slope = sxy / sxx
	if syy == 0 {
		return slope, 0
	}
	r2 = sxy * sxy / (sxx * syy)
	if math.IsNaN(r2) {
		r2 = 0
	}
	return slope, r2
}

// verdict is what a series is.
type verdict int

const (
	tooShort verdict = iota
	steady           // steady growth: a leak
	warmUp           // grew, then stopped
	sawtooth         // rises and falls: a cache that evicts, a pool
	noise            // no trend worth the name
	flat             // does not grow
)

func (v verdict) String() string {
	return [...]string{"too short", "steady growth", "warm-up then flat", "sawtooth", "noise", "flat"}[v]
}

// classify says whether t is steady growth by the thresholds s, with at
// least minGrowth from first to last point, and if not, what it is. A
// series that rises and falls back is a sawtooth when its range is at
// least minGrowth and, for a site's own series (not a whole heap, where a
// cache's churn is a small part), a fifth of its mean.
func (s Series) classify(t trend, minGrowth float64) verdict {
	return s.classifyShare(t, minGrowth, 0.2)
}

// classifyShare is classify with the least range of a sawtooth, as a
// share of the series' mean, given.
func (s Series) classifyShare(t trend, minGrowth, sawtoothShare float64) verdict {
	switch {
	case t.n < s.MinSnapshots:
		return tooShort
	case t.span < minGrowth || t.span == 0:
		return flat
	case t.slope > 0 && t.growth >= minGrowth && t.lateSlope >= s.LateSlopeRatio*t.slope &&
		t.rising >= s.MinRisingSteps && t.r2 >= s.MinR2:
		return steady
	case t.rising < s.MinRisingSteps && t.maxDrop >= t.span/2 && t.maxRise >= t.span/2 && t.span >= sawtoothShare*math.Abs(t.mean):
		// Rises and falls back by half its range or more: a cache
		// that evicts, a pool, batches.
		return sawtooth
	case t.slope > 0 && t.growth >= minGrowth && t.lateSlope < s.LateSlopeRatio*t.slope:
		// Grew early, not late.
		return warmUp
	case t.r2 < s.MinR2:
		return noise
	default:
		return flat
	}
}

// confidence of a steady verdict: the fit, discounted for short series.
func (t trend) confidence() float64 {
	c := t.r2 * t.rising * (1 - 1/float64(t.n))
	return math.Round(c*100) / 100
}
