package load

import (
	"encoding/json"
	"math"
	"time"
)

// Result is the outcome of a run.
//
// Every scheduled request is either sent (Requests) or dropped (Dropped).
// A sent request either completes (Completed: a status line and the whole
// body were received, whatever the status) or fails in transport. Errors
// counts the transport failures and the completed responses with a status of
// 400 or more, so Errors = Requests − Completed + (completed with status
// ≥ 400). ErrorKinds splits Errors by kind and sums to it; StatusCodes splits
// Completed by status and sums to it.
type Result struct {
	// Requests is the number of requests sent.
	Requests uint64
	// Completed is the number of responses received in full, any status.
	Completed uint64
	// Errors is the number of transport failures plus completed responses
	// with a status of 400 or more.
	Errors uint64
	// Dropped is the number of requests that fell due while MaxInFlight
	// requests were outstanding and were not sent.
	Dropped uint64
	// Duration is the time from the first request's intended send time to
	// the end of the run (the last response or timeout, or cancellation).
	Duration time.Duration
	// TargetRate is the requested rate, per second.
	TargetRate float64
	// Rate is the achieved rate: Completed per second of Duration.
	Rate float64
	// StatusCodes counts completed responses by status code.
	StatusCodes map[int]uint64
	// ErrorKinds counts errors by kind: one of the ErrorKind constants for
	// transport failures, or "status_4xx", "status_5xx" (the status code's
	// hundreds) for responses with a status of 400 or more.
	ErrorKinds map[string]uint64
	// BytesIn is the number of response body bytes read, BytesOut the number
	// of request body bytes sent. Headers are not counted.
	BytesIn, BytesOut uint64
	// Latency summarises the latency of completed responses, from each
	// request's intended send time to the end of its response body.
	Latency LatencySummary
}

// The kinds of transport failure counted in Result.ErrorKinds.
const (
	// ErrorKindTimeout: the request's Timeout (or a deadline of the
	// transport) expired before the whole response was read.
	ErrorKindTimeout = "timeout"
	// ErrorKindConnectionRefused: nothing listens at the target's address.
	ErrorKindConnectionRefused = "connection_refused"
	// ErrorKindConnectionReset: the peer reset the connection or the write
	// side broke.
	ErrorKindConnectionReset = "connection_reset"
	// ErrorKindConnectionClosed: the server closed the connection before a
	// whole response was read.
	ErrorKindConnectionClosed = "connection_closed"
	// ErrorKindDNS: the target's host name could not be resolved.
	ErrorKindDNS = "dns"
	// ErrorKindTLS: the TLS handshake or certificate verification failed.
	ErrorKindTLS = "tls"
	// ErrorKindCanceled: the run's context ended while the request was
	// outstanding.
	ErrorKindCanceled = "canceled"
	// ErrorKindInvalidRequest: the request could not be built from the
	// template.
	ErrorKindInvalidRequest = "invalid_request"
	// ErrorKindOther: any other transport failure.
	ErrorKindOther = "other"
)

// resultJSON is the JSON form of Result: snake_case keys, durations in
// seconds.
type resultJSON struct {
	Requests        uint64            `json:"requests"`
	Completed       uint64            `json:"completed"`
	Errors          uint64            `json:"errors"`
	Dropped         uint64            `json:"dropped"`
	DurationSeconds float64           `json:"duration_seconds"`
	TargetRate      float64           `json:"target_rate"`
	Rate            float64           `json:"rate"`
	StatusCodes     map[int]uint64    `json:"status_codes"`
	ErrorKinds      map[string]uint64 `json:"error_kinds"`
	BytesIn         uint64            `json:"bytes_in"`
	BytesOut        uint64            `json:"bytes_out"`
	Latency         LatencySummary    `json:"latency"`
}

// MarshalJSON encodes r with snake_case keys and durations in seconds.
func (r Result) MarshalJSON() ([]byte, error) {
	j := resultJSON{
		Requests:        r.Requests,
		Completed:       r.Completed,
		Errors:          r.Errors,
		Dropped:         r.Dropped,
		DurationSeconds: r.Duration.Seconds(),
		TargetRate:      r.TargetRate,
		Rate:            r.Rate,
		StatusCodes:     r.StatusCodes,
		ErrorKinds:      r.ErrorKinds,
		BytesIn:         r.BytesIn,
		BytesOut:        r.BytesOut,
		Latency:         r.Latency,
	}
	if j.StatusCodes == nil {
		j.StatusCodes = map[int]uint64{}
	}
	if j.ErrorKinds == nil {
		j.ErrorKinds = map[string]uint64{}
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes the form MarshalJSON writes.
func (r *Result) UnmarshalJSON(data []byte) error {
	var j resultJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*r = Result{
		Requests:    j.Requests,
		Completed:   j.Completed,
		Errors:      j.Errors,
		Dropped:     j.Dropped,
		Duration:    seconds(j.DurationSeconds),
		TargetRate:  j.TargetRate,
		Rate:        j.Rate,
		StatusCodes: j.StatusCodes,
		ErrorKinds:  j.ErrorKinds,
		BytesIn:     j.BytesIn,
		BytesOut:    j.BytesOut,
		Latency:     j.Latency,
	}
	return nil
}

// LatencySummary is the distribution of latencies in a run. Min, Mean and
// Max are exact; the percentiles are within HistogramMaxRelativeError.
type LatencySummary struct {
	Min, Mean, P50, P90, P99, P999, Max time.Duration
}

type latencyJSON struct {
	Min  float64 `json:"min_seconds"`
	Mean float64 `json:"mean_seconds"`
	P50  float64 `json:"p50_seconds"`
	P90  float64 `json:"p90_seconds"`
	P99  float64 `json:"p99_seconds"`
	P999 float64 `json:"p99_9_seconds"`
	Max  float64 `json:"max_seconds"`
}

// MarshalJSON encodes s with each duration in seconds under a key with a
// _seconds suffix.
func (s LatencySummary) MarshalJSON() ([]byte, error) {
	return json.Marshal(latencyJSON{
		Min:  s.Min.Seconds(),
		Mean: s.Mean.Seconds(),
		P50:  s.P50.Seconds(),
		P90:  s.P90.Seconds(),
		P99:  s.P99.Seconds(),
		P999: s.P999.Seconds(),
		Max:  s.Max.Seconds(),
	})
}

// UnmarshalJSON decodes the form MarshalJSON writes.
func (s *LatencySummary) UnmarshalJSON(data []byte) error {
	var j latencyJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*s = LatencySummary{
		Min:  seconds(j.Min),
		Mean: seconds(j.Mean),
		P50:  seconds(j.P50),
		P90:  seconds(j.P90),
		P99:  seconds(j.P99),
		P999: seconds(j.P999),
		Max:  seconds(j.Max),
	}
	return nil
}

func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}
