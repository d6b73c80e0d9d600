// Package clock waits for instants: the one timer loop of the collector's
// snapshots and the watcher's schedules.
package clock

import (
	"context"
	"time"
)

// SleepUntil waits until t, as now tells the time, and reports whether it
// got there: false when ctx ended first. A t already past returns at once,
// with whether ctx is still live.
func SleepUntil(ctx context.Context, t time.Time, now func() time.Time) bool {
	d := t.Sub(now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
