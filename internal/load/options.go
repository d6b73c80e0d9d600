package load

import (
	"crypto/tls"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/option"
	"github.com/heapscope/heapscope/internal/result"
)

// Defaults for the zero values of Options.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultMaxInFlight      = 512
	DefaultMaxBody          = 64 << 20
	DefaultProgressInterval = 500 * time.Millisecond
)

// BehindLag is the lag beyond which the open model's generator counts as
// fallen behind its schedule: when 1 % of the requests or more left later
// than this after their intended time (Result.Behind).
const BehindLag = result.LoadBehindLag

// EndGrace is how long the requests still outstanding at the window's end
// may take to finish: after it they are cancelled and counted as
// ErrorKindUnfinished, so that a run ends within Duration plus EndGrace
// whatever the service does.
const EndGrace = time.Second

// Model is a load model.
type Model string

// The load models.
const (
	// ModelOpen sends requests at intended times set by a rate, whatever
	// the service does, like vegeta and wrk2.
	ModelOpen Model = result.LoadModelOpen
	// ModelClosed keeps a fixed number of connections busy, each sending
	// its next request when the last one completes, like wrk.
	ModelClosed Model = result.LoadModelClosed
)

// Protocol selects the HTTP version.
type Protocol string

// The protocols.
const (
	// ProtocolAuto speaks HTTP/1.1 to http URLs, and HTTP/2 to https URLs
	// whose server offers it (ALPN), HTTP/1.1 otherwise.
	ProtocolAuto Protocol = ""
	// ProtocolHTTP1 speaks HTTP/1.1 only, over TLS for https URLs.
	ProtocolHTTP1 Protocol = "http1"
	// ProtocolHTTP2 speaks HTTP/2 only: over TLS for https URLs, h2c with
	// prior knowledge for http URLs.
	ProtocolHTTP2 Protocol = "http2"
)

// Options configures a run.
type Options struct {
	// Targets are the requests, sent round-robin: request number i uses
	// Targets[i mod len(Targets)]. At least one.
	Targets []Request

	// Rate > 0 selects the open model: requests per second, each sent at
	// its intended time (see Schedule) by a pool of at most MaxInFlight
	// workers. Ramp, when set, grows the rate linearly from zero over its
	// length, within Duration.
	Rate float64
	Ramp time.Duration
	// MaxInFlight bounds the open model's outstanding requests, and so its
	// connections and memory; 0 means DefaultMaxInFlight. A request that
	// falls due while MaxInFlight are outstanding waits for a free worker
	// (and its latency counts the wait); one still waiting BehindLag after
	// the window's end is dropped and counted in Result.Dropped.
	MaxInFlight int

	// Connections > 0, with Rate 0, selects the closed model: that many
	// connections send requests back to back.
	Connections int

	// Duration is how long requests are sent; MaxRequests, when set, stops
	// the run after that many requests. At least one of the two is set.
	Duration    time.Duration
	MaxRequests uint64
	// Stop, when set and closed, ends the window early as Duration's end
	// would: no new requests, the outstanding ones finish. A caller that
	// decides the length as the run goes (profile --until-confident) sets
	// Duration to the longest and closes Stop.
	Stop <-chan struct{}

	// Timeout bounds each request from its send to the end of its response
	// body; 0 means DefaultTimeout.
	Timeout time.Duration
	// NoKeepAlive sends every request on a new connection.
	NoKeepAlive bool
	// Protocol selects the HTTP version.
	Protocol Protocol
	// TLS configures https connections; nil verifies the server against the
	// system's roots.
	TLS *tls.Config
	// MaxBody bounds a response body; a larger one fails the request with
	// ErrorKindBodyTooLarge. 0 means DefaultMaxBody.
	MaxBody int

	// Seed seeds the {rand:N} and {pick:FILE} placeholders: the same seed
	// gives the same URL to the same request number. 0 is a seed like any
	// other.
	Seed int64
	// ReadFile reads the files of {pick:FILE} placeholders; nil means
	// os.ReadFile.
	ReadFile ReadFileFunc

	// Series keeps per-second figures in Result.Series.
	Series bool
	// Progress, if set, is called every ProgressInterval (0 means
	// DefaultProgressInterval) while the run lasts, and once more with the
	// final counts before Run returns. Calls never overlap.
	Progress         func(Progress)
	ProgressInterval time.Duration
}

// Progress is a snapshot of a running load.
type Progress struct {
	// Elapsed is the time since the run started; Duration the run's
	// Options.Duration and MaxRequests its Options.MaxRequests (0 when
	// unset).
	Elapsed, Duration time.Duration
	MaxRequests       uint64
	// Requests counts the requests done (completed or failed), Errors the
	// failures and responses with a status ≥ 400 among them.
	Requests, Errors uint64
	// Rate is the requests done per second since the previous snapshot.
	Rate float64
	// InFlight is the number of requests outstanding.
	InFlight int
	// Lag is the open model's largest lag behind the schedule since the
	// previous snapshot.
	Lag time.Duration
}

// String describes the snapshot on one line: elapsed of total time (or
// requests), the current rate, errors, requests in flight, and the lag
// once it reaches BehindLag.
func (s Progress) String() string {
	var b strings.Builder
	el := s.Elapsed.Truncate(100 * time.Millisecond)
	if s.Duration > 0 {
		fmt.Fprintf(&b, "load %s/%s", el, s.Duration)
	} else {
		fmt.Fprintf(&b, "load %s", el)
	}
	if s.MaxRequests > 0 {
		fmt.Fprintf(&b, "  %d/%d requests", s.Requests, s.MaxRequests)
	} else {
		fmt.Fprintf(&b, "  %d requests", s.Requests)
	}
	fmt.Fprintf(&b, "  %.0f/s  %d errors  %d in flight", s.Rate, s.Errors, s.InFlight)
	if s.Lag >= BehindLag {
		fmt.Fprintf(&b, "  behind schedule by up to %s", s.Lag.Round(time.Millisecond))
	}
	return b.String()
}

// Model returns the model the options select.
func (o *Options) Model() Model {
	if o.Rate > 0 {
		return ModelOpen
	}
	return ModelClosed
}

// Describe says how the load is driven: "at 500 requests/s" (the open
// model) or "with 8 connections back to back" (the closed one).
func (o *Options) Describe() string {
	if o.Rate > 0 {
		return fmt.Sprintf("at %g requests/s", o.Rate)
	}
	return fmt.Sprintf("with %d connections back to back", o.Connections)
}

// SetDefaults fills the defaults of the zero fields: Timeout, MaxInFlight
// (of the open model), MaxBody and ProgressInterval.
func (o *Options) SetDefaults() {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxInFlight == 0 && o.Rate > 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.MaxBody == 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.ProgressInterval == 0 {
		o.ProgressInterval = DefaultProgressInterval
	}
}

// Validate reports the first option that cannot run as an
// *option.Error. New fills the defaults of zero fields (SetDefaults)
// before it validates; Validate takes the options as they are, so a zero Timeout,
// which a command line gives only when its user typed 0, is an error
// here. It does not compile the requests (New does).
func (o *Options) Validate() error {
	switch {
	case math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0) || o.Rate < 0:
		return option.Errorf("Rate", "{Rate} %g: give a positive rate, or {Connections} N for the closed model", o.Rate)
	case o.Connections < 0:
		return option.Errorf("Connections", "{Connections} %d: give a positive number", o.Connections)
	case o.Rate > 0 && o.Connections > 0:
		return option.Errorf("Rate", "{Rate} and {Connections} both set: {Rate} R is the open model, {Connections} N the closed model; give one")
	case o.Rate == 0 && o.Connections == 0:
		return option.Errorf("Rate", "no load model: give {Rate} R (open model, requests per second) or {Connections} N (closed model)")
	case o.MaxInFlight < 0:
		return option.Errorf("MaxInFlight", "{MaxInFlight} %d: give a positive number", o.MaxInFlight)
	case o.MaxInFlight > 0 && o.Rate == 0:
		return option.Errorf("MaxInFlight", "{MaxInFlight} bounds the open model ({Rate}); the closed model's concurrency is {Connections}")
	case o.Ramp < 0:
		return option.Errorf("Ramp", "{Ramp} %s: give a positive duration", o.Ramp)
	case o.Ramp > 0 && o.Rate == 0:
		return option.Errorf("Ramp", "{Ramp} applies to the open model: give {Rate}")
	case o.Timeout <= 0:
		return option.Errorf("Timeout", "{Timeout} %s: give a positive duration", o.Timeout)
	case o.Duration < 0:
		return option.Errorf("Duration", "{Duration} %s: give a positive duration", o.Duration)
	case o.Duration == 0 && o.MaxRequests == 0:
		return option.Errorf("Duration", "{Duration} 0 and no {MaxRequests}: give one of them")
	case o.Rate > 1e7:
		return option.Errorf("Rate", "{Rate} %g per second is more than one machine can send: give at most 10000000", o.Rate)
	case o.Connections > 100_000:
		return option.Errorf("Connections", "{Connections} %d: give at most 100000", o.Connections)
	case o.Ramp > 0 && o.Duration > 0 && o.Ramp > o.Duration:
		return option.Errorf("Ramp", "{Ramp} %s is longer than the %s run", o.Ramp, o.Duration)
	case o.MaxInFlight > 100_000:
		return option.Errorf("MaxInFlight", "{MaxInFlight} %d: give at most 100000", o.MaxInFlight)
	case o.MaxBody < 0:
		return option.Errorf("MaxBody", "{MaxBody} %d must not be negative", o.MaxBody)
	case o.ProgressInterval < 0:
		return option.Errorf("ProgressInterval", "{ProgressInterval} %s must not be negative", o.ProgressInterval)
	case len(o.Targets) == 0:
		return option.Errorf("Targets", "no request to send")
	}
	switch o.Protocol {
	case ProtocolAuto, ProtocolHTTP1, ProtocolHTTP2:
		return nil
	}
	return option.Errorf("Protocol", "{Protocol} %q: want http1 or http2", o.Protocol)
}

// workers returns the most requests outstanding at once.
func (o *Options) workers() int {
	if o.Rate > 0 {
		return o.MaxInFlight
	}
	return o.Connections
}
