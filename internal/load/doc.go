// Package load drives HTTP load at a constant rate while a service is being
// profiled.
//
// Run sends one request template at a fixed rate for a fixed duration (an
// open model: requests are due at start + i/rate whatever the service does)
// and returns a Result with counts, status codes, error kinds, bytes and a
// latency summary. The steps of a run are:
//
//  1. validate the Options and compile the request URL into a Template;
//  2. schedule request i at its intended time start + i/rate, each due time
//     computed from the start so that delays never accumulate; a scheduler
//     that falls behind catches up by sending the overdue requests at once;
//  3. send each request in its own goroutine, at most MaxInFlight at a time:
//     a request that falls due while MaxInFlight requests are outstanding is
//     dropped and counted, never queued;
//  4. drain and close every response body so connections are reused, and
//     record latency from the request's intended send time, so that a
//     stalled server shows in the latency instead of hiding behind a slower
//     send rate (coordinated omission);
//  5. when the duration has elapsed, wait for the outstanding requests (each
//     bounded by Timeout) and summarise.
//
// Latency percentiles come from Histogram, a fixed log-linear histogram that
// reports every value within 1/128 (0.79%) of the exact sample.
//
// Timing is read from the time package only, so tests drive the scheduler
// with testing/synctest and an in-memory http.RoundTripper.
package load
