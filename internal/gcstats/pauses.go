package gcstats

import (
	"slices"
	"time"
)

// Pause is one GC cycle's stop-the-world pause as the pause rings record
// it.
type Pause struct {
	// Cycle numbers the cycle from the process start, counting from 1.
	Cycle uint32
	// End is when the pause ended, by the target's clock.
	End time.Time
	// Duration is the pause's length.
	Duration time.Duration
}

// Pauses returns the pauses of the cycles between two MemStats snapshots
// of one process, oldest first: cycle n (counting from 1) has its pause at
// PauseNs[(n-1)%256] and its end at PauseEnd[(n-1)%256] of end's rings.
// When more than PauseRingSize cycles ran, only the last PauseRingSize are
// there. Snapshots that are not of one process in order (see NewWindow)
// give none.
func Pauses(start, end MemStats) []Pause {
	if incomparable(start, end) != "" {
		return nil
	}
	n := min(end.NumGC-start.NumGC, PauseRingSize)
	out := make([]Pause, 0, n)
	for cycle := end.NumGC; cycle > end.NumGC-n; cycle-- {
		i := (cycle - 1) % PauseRingSize
		out = append(out, Pause{
			Cycle:    cycle,
			End:      time.Unix(0, int64(end.PauseEnd[i])).UTC(),
			Duration: time.Duration(end.PauseNs[i]),
		})
	}
	slices.Reverse(out)
	return out
}
