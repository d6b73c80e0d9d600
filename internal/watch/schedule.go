package watch

import (
	"hash/fnv"
	"time"
)

// Offset is where, within every period of length every, the target with
// this key is captured: a stable spread, so that a fleet of targets on one
// cadence is not captured all at once and a restarted watcher keeps each
// target's slots (a slot is a fixed instant, not "every after start").
func Offset(key string, every time.Duration) time.Duration {
	if every <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return time.Duration(h.Sum64() % uint64(every))
}

// NextSlot returns the first slot of the schedule (every, offset) at or
// after t. Slots are offset + k·every from the Unix epoch.
func NextSlot(t time.Time, every, offset time.Duration) time.Time {
	if every <= 0 {
		return t
	}
	since := t.Sub(time.Unix(0, 0)) - offset
	k := since / every
	if since%every != 0 && since > 0 {
		k++
	}
	if since < 0 {
		// Before the epoch's first slot: never, in practice.
		k = 0
	}
	return time.Unix(0, 0).Add(offset + k*every)
}
