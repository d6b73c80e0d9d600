package load

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/result"
)

// Result is the outcome of a run.
//
// Every request due in the schedule is either sent (Requests) or, in the
// open model, dropped when the run ended before a worker was free to send
// it (Dropped). A sent request either completes (Completed: a status line and
// the whole body were received, whatever the status) or fails in transport.
// Errors counts the transport failures and the completed responses with a
// status of 400 or more. ErrorKinds splits Errors by kind and sums to it;
// StatusCodes splits Completed by status.
type Result struct {
	// Model is the load model; Protocol the HTTP versions the responses
	// came in ("HTTP/1.1", "HTTP/2", or both).
	Model    Model
	Protocol string
	// Method and URL are those of the first request; Targets counts the
	// requests sent round-robin.
	Method, URL string
	Targets     int
	// AskedRate and Ramp are the open model's options, MaxInFlight its
	// bound on outstanding requests. Connections is the closed model's
	// option; in the open model, the workers it started, each with a
	// connection of its own over HTTP/1.1. PeakInFlight is the most
	// requests outstanding at once.
	AskedRate    float64
	Ramp         time.Duration
	Connections  int
	MaxInFlight  int
	PeakInFlight int
	NoKeepAlive  bool
	// Opened counts the connections opened during the run: more than
	// Connections when the server closed them (or NoKeepAlive).
	Opened uint64
	// AtBound counts the open model's requests that fell due while
	// MaxInFlight requests were outstanding, and waited for one to end.
	AtBound uint64

	// Requests is the number of requests sent.
	Requests uint64
	// Completed is the number of responses received in full, any status.
	Completed uint64
	// Errors is the number of transport failures plus completed responses
	// with a status of 400 or more.
	Errors uint64
	// Dropped is the number of requests that were due in the open model
	// but still waiting for a free worker BehindLag after the window's end
	// (or when the run was interrupted).
	Dropped uint64
	// Duration is how long requests were sent: Options.Duration, less when
	// the run was interrupted; with MaxRequests, the span of the schedule
	// (open model) or of the whole run (closed model).
	Duration time.Duration
	// Elapsed runs from the start to the end of the last response.
	Elapsed time.Duration
	// Rate is the achieved rate: Requests per second of Duration.
	Rate float64
	// BytesIn and BytesOut count the bytes read from and written to the
	// connections: headers, bodies and TLS records.
	BytesIn, BytesOut uint64
	// StatusCodes counts completed responses by status code.
	StatusCodes map[int]uint64
	// ErrorKinds counts errors by kind: one of the ErrorKind constants for
	// transport failures, or "status_4xx", "status_5xx" for responses with
	// a status of 400 or more.
	ErrorKinds map[string]uint64
	// Latency summarises how long requests waited for their response:
	// completed ones until the end of the body, and those that timed out
	// or were still outstanding at the end (ErrorKindUnfinished) until
	// they were given up, so a service that answers nothing shows as
	// slow, never as 0. It counts from each request's intended send time:
	// in the open model the schedule's, so a stalled server or a generator
	// that fell behind shows in the latency instead of hiding behind fewer
	// requests (no coordinated omission); in the closed model the send
	// time.
	Latency LatencySummary
	// Lag summarises how late requests were sent after their intended
	// time: the generator's own delay (open model; zero in the closed one).
	Lag LagSummary
	// Behind reports that the open model fell behind its schedule: it
	// dropped requests, or 1 % of them or more left BehindLag or later.
	// HeldBack says what held it back.
	Behind   bool
	HeldBack HeldBy
	// Interrupted reports that the run's context ended before the run did.
	Interrupted bool
	// Series holds per-second figures when Options.Series is set.
	Series []Second
}

// HeldBy names what held the open model back from its schedule.
type HeldBy string

// What can hold the open model back.
const (
	// HeldByMaxInFlight: requests fell due while MaxInFlight were
	// outstanding; the service did not answer fast enough to free a slot.
	HeldByMaxInFlight HeldBy = result.LoadHeldByMaxInFlight
	// HeldByGenerator: the generator itself (its pacer, or the machine it
	// runs on) could not send on time.
	HeldByGenerator HeldBy = result.LoadHeldByGenerator
)

// LatencySummary is a distribution of durations. Min, Mean and Max are
// exact; the percentiles are within HistogramMaxRelativeError.
type LatencySummary struct {
	Min, Mean, P50, P90, P99, P999, Max time.Duration
}

// LagSummary describes how late requests left after their intended time.
type LagSummary struct {
	Mean, P99, Max time.Duration
}

// Second is one second of a run, counted from its start.
type Second struct {
	// Sent counts the requests sent during the second; Done those that
	// ended in it, and Errors the failures among them.
	Sent, Done, Errors uint64
	// P50, P90, P99 and Max describe the latency of the responses completed
	// in the second.
	P50, P90, P99, Max time.Duration
	// MaxLag is the largest lag of the requests that ended in the second.
	MaxLag time.Duration
}

// SuccessRatio returns the share of requests sent that completed with a
// status below 400, or 0 when none was sent.
func (r *Result) SuccessRatio() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Requests-min(r.Errors, r.Requests)) / float64(r.Requests)
}

// NoneSucceeded returns, when no request of the run succeeded, an error
// that says why: none was sent, or the kinds of their failures; nil when
// some succeeded.
func (r *Result) NoneSucceeded() error {
	switch {
	case r.SuccessRatio() > 0:
		return nil
	case r.Requests == 0:
		return errors.New("no request was sent")
	}
	return fmt.Errorf("none of the %d requests succeeded (%s)", r.Requests, humanize.Tally(r.Summary().ErrorKinds, " "))
}

// Summary returns the result as result.json and load.json hold it.
func (r *Result) Summary() *result.Load {
	l := &result.Load{
		Model:           string(r.Model),
		Protocol:        r.Protocol,
		Method:          r.Method,
		URL:             r.URL,
		Targets:         r.Targets,
		RequestedRate:   r.AskedRate,
		RampSeconds:     r.Ramp.Seconds(),
		Connections:     r.Connections,
		MaxInFlight:     r.MaxInFlight,
		PeakInFlight:    r.PeakInFlight,
		Opened:          r.Opened,
		NoKeepAlive:     r.NoKeepAlive,
		DurationSeconds: r.Duration.Seconds(),
		ElapsedSeconds:  r.Elapsed.Seconds(),
		Interrupted:     r.Interrupted,
		Requests:        r.Requests,
		Completed:       r.Completed,
		Errors:          r.Errors,
		Dropped:         r.Dropped,
		AchievedRate:    r.Rate,
		SuccessRatio:    r.SuccessRatio(),
		BytesIn:         r.BytesIn,
		BytesOut:        r.BytesOut,
		LatencySeconds:  latencySeconds(r.Latency),
	}
	if s := r.Duration.Seconds(); s > 0 {
		l.BytesInPerSecond = float64(r.BytesIn) / s
		l.BytesOutPerSecond = float64(r.BytesOut) / s
	}
	if len(r.StatusCodes) > 0 {
		l.StatusCodes = make(map[string]uint64, len(r.StatusCodes))
		for code, n := range r.StatusCodes {
			l.StatusCodes[strconv.Itoa(code)] = n
		}
	}
	if len(r.ErrorKinds) > 0 {
		l.ErrorKinds = make(map[string]uint64, len(r.ErrorKinds))
		for k, n := range r.ErrorKinds {
			l.ErrorKinds[k] = n
		}
	}
	if r.Model == ModelOpen {
		l.Lag = &result.LoadLag{
			MeanSeconds: r.Lag.Mean.Seconds(), P99Seconds: r.Lag.P99.Seconds(), MaxSeconds: r.Lag.Max.Seconds(),
			FellBehind: r.Behind, HeldBack: string(r.HeldBack),
		}
	}
	for i, s := range r.Series {
		l.Series = append(l.Series, result.LoadSecond{
			Second: i, Sent: s.Sent, Done: s.Done, Errors: s.Errors,
			LatencyP50Seconds: s.P50.Seconds(), LatencyP90Seconds: s.P90.Seconds(),
			LatencyP99Seconds: s.P99.Seconds(), LatencyMaxSeconds: s.Max.Seconds(),
			MaxLagSeconds: s.MaxLag.Seconds(),
		})
	}
	return l
}

func latencySeconds(s LatencySummary) result.Latency {
	return result.Latency{
		Min: s.Min.Seconds(), Mean: s.Mean.Seconds(),
		P50: s.P50.Seconds(), P90: s.P90.Seconds(), P99: s.P99.Seconds(), P999: s.P999.Seconds(),
		Max: s.Max.Seconds(),
	}
}
