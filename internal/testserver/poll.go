package testserver

import (
	"testing"
	"time"
)

// pollEvery is how often WaitFor asks again.
const pollEvery = 50 * time.Millisecond

// WaitFor calls f until it reports a value, and returns that value: the
// way a test waits for something to happen. It fails the test, saying
// what it waited for, only when f has reported nothing within d: d bounds
// a thing that never happens, it does not measure one that does, so give
// it room for a machine starved of CPU (tens of seconds, not hundreds of
// milliseconds). f may fail the test itself on an error.
func WaitFor[T any](t testing.TB, d time.Duration, what string, f func() (T, bool)) T {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if v, ok := f(); ok {
			return v
		}
		if time.Now().After(deadline) {
			// One last look: the deadline may have passed while f ran.
			if v, ok := f(); ok {
				return v
			}
			t.Fatalf("waited %s for %s: it did not happen", d, what)
		}
		select {
		case <-tick.C:
		case <-t.Context().Done():
			t.Fatalf("waiting for %s: the test ended", what)
		}
	}
}

// Until is WaitFor for a condition with no value.
func Until(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	WaitFor(t, d, what, func() (struct{}, bool) { return struct{}{}, cond() })
}
