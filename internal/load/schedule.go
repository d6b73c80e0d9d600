package load

import (
	"math"
	"time"
)

// Schedule gives the intended send times of the open model: Rate requests
// per second, reached by a linear ramp from zero over Ramp when Ramp is set.
// Intended times are computed from the start for each request, never by
// adding intervals, so rounding and late wake-ups never accumulate.
type Schedule struct {
	// Rate is the steady rate, per second, > 0.
	Rate float64
	// Ramp is how long the rate takes to grow linearly from 0 to Rate;
	// 0 starts at Rate.
	Ramp time.Duration
}

// At returns when request i (from 0) is due, as an offset from the start.
//
// Without a ramp, request i is due at i/Rate. With one, the number of
// requests due by t is Rate·t²/(2·Ramp) during the ramp and
// Rate·(t − Ramp/2) after it; request i is due when that count reaches i.
func (s Schedule) At(i uint64) time.Duration {
	x := float64(i)
	ramp := s.Ramp.Seconds()
	var sec float64
	switch {
	case ramp <= 0:
		sec = x / s.Rate
	case x < s.Rate*ramp/2:
		sec = math.Sqrt(2 * ramp * x / s.Rate)
	default:
		sec = x/s.Rate + ramp/2
	}
	return seconds(sec)
}

// Count returns how many requests are due before d: the smallest i with
// At(i) ≥ d.
func (s Schedule) Count(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	t := d.Seconds()
	ramp := s.Ramp.Seconds()
	var n float64
	switch {
	case ramp <= 0:
		n = s.Rate * t
	case t < ramp:
		n = s.Rate * t * t / (2 * ramp)
	default:
		n = s.Rate * (t - ramp/2)
	}
	if n >= math.MaxUint64/2 {
		return math.MaxUint64 / 2
	}
	// The estimate is within one of the answer; settle it on At itself.
	i := uint64(math.Max(math.Ceil(n)-1, 0))
	for i > 0 && s.At(i-1) >= d {
		i--
	}
	for s.At(i) < d {
		i++
	}
	return i
}

func seconds(s float64) time.Duration {
	if s >= math.MaxInt64/float64(time.Second) {
		return math.MaxInt64
	}
	return time.Duration(math.Round(s * float64(time.Second)))
}
