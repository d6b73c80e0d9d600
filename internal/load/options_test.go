package load

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/option"
)

func TestOptions_Validate(t *testing.T) {
	req := []Request{{URL: "http://h/"}}
	open := Options{Targets: req, Rate: 10, Timeout: time.Second, Duration: time.Second}
	closed := Options{Targets: req, Connections: 2, Timeout: time.Second, Duration: time.Second}
	with := func(o Options, f func(*Options)) Options { f(&o); return o }
	tests := []struct {
		name  string
		opts  Options
		field string // "" for valid options
		want  string
	}{
		{"open model", open, "", ""},
		{"closed model", closed, "", ""},
		{"requests without a duration", with(open, func(o *Options) { o.Duration, o.MaxRequests = 0, 10 }), "", ""},
		{"negative rate", with(open, func(o *Options) { o.Rate = -1 }), "Rate", "Rate -1: give a positive rate, or Connections N for the closed model"},
		{"rate not a number", with(open, func(o *Options) { o.Rate = math.NaN() }), "Rate", "Rate NaN: give a positive rate, or Connections N for the closed model"},
		{"infinite rate", with(open, func(o *Options) { o.Rate = math.Inf(1) }), "Rate", "Rate +Inf: give a positive rate"},
		{"negative connections", with(closed, func(o *Options) { o.Connections = -1 }), "Connections", "Connections -1: give a positive number"},
		{"both models", with(open, func(o *Options) { o.Connections = 2 }), "Rate", "Rate and Connections both set"},
		{"no model", with(open, func(o *Options) { o.Rate = 0 }), "Rate", "no load model: give Rate R (open model, requests per second) or Connections N (closed model)"},
		{"negative max in-flight", with(open, func(o *Options) { o.MaxInFlight = -1 }), "MaxInFlight", "MaxInFlight -1: give a positive number"},
		{"max in-flight of the closed model", with(closed, func(o *Options) { o.MaxInFlight = 5 }), "MaxInFlight", "MaxInFlight bounds the open model (Rate); the closed model's concurrency is Connections"},
		{"negative ramp", with(open, func(o *Options) { o.Ramp = -time.Second }), "Ramp", "Ramp -1s: give a positive duration"},
		{"ramp of the closed model", with(closed, func(o *Options) { o.Ramp = time.Second }), "Ramp", "Ramp applies to the open model: give Rate"},
		{"ramp beyond the run", with(open, func(o *Options) { o.Ramp = 2 * time.Second }), "Ramp", "Ramp 2s is longer than the 1s run"},
		{"zero timeout", with(open, func(o *Options) { o.Timeout = 0 }), "Timeout", "Timeout 0s: give a positive duration"},
		{"negative duration", with(open, func(o *Options) { o.Duration = -time.Second }), "Duration", "Duration -1s: give a positive duration"},
		{"no end", with(open, func(o *Options) { o.Duration = 0 }), "Duration", "Duration 0 and no MaxRequests: give one of them"},
		{"rate beyond a machine", with(open, func(o *Options) { o.Rate = 1e8 }), "Rate", "Rate 1e+08 per second is more than one machine can send"},
		{"too many connections", with(closed, func(o *Options) { o.Connections = 100_001 }), "Connections", "Connections 100001: give at most 100000"},
		{"too many in flight", with(open, func(o *Options) { o.MaxInFlight = 100_001 }), "MaxInFlight", "MaxInFlight 100001: give at most 100000"},
		{"negative max body", with(open, func(o *Options) { o.MaxBody = -1 }), "MaxBody", "MaxBody -1 must not be negative"},
		{"negative progress interval", with(open, func(o *Options) { o.ProgressInterval = -1 }), "ProgressInterval", "ProgressInterval -1ns must not be negative"},
		{"no request", with(open, func(o *Options) { o.Targets = nil }), "Targets", "no request to send"},
		{"unknown protocol", with(open, func(o *Options) { o.Protocol = "http3" }), "Protocol", `Protocol "http3": want http1 or http2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var oe *option.Error
			if !errors.As(err, &oe) {
				t.Fatalf("Validate() = %v, want an *option.Error", err)
			}
			if oe.Field != tt.field || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Validate() = %s error %q, want %s error %q…", oe.Field, err, tt.field, tt.want)
			}
		})
	}
}

// TestNew_Defaults checks that New fills the zero fields before it
// validates: a library caller's zero Timeout is the default, not an
// error.
func TestNew_Defaults(t *testing.T) {
	g, err := New(Options{Targets: []Request{{URL: "http://h/"}}, Rate: 10, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if g.opts.Timeout != DefaultTimeout || g.opts.MaxInFlight != DefaultMaxInFlight || g.opts.MaxBody != DefaultMaxBody {
		t.Errorf("options %+v: the defaults are not filled", g.opts)
	}
}

func TestOptions_Describe(t *testing.T) {
	if got, want := (&Options{Rate: 500}).Describe(), "at 500 requests/s"; got != want {
		t.Errorf("open model: %q, want %q", got, want)
	}
	if got, want := (&Options{Connections: 8}).Describe(), "with 8 connections back to back"; got != want {
		t.Errorf("closed model: %q, want %q", got, want)
	}
}

func TestResult_NoneSucceeded(t *testing.T) {
	tests := []struct {
		name string
		res  Result
		want string // "" for nil
	}{
		{"some succeeded", Result{Requests: 10, Completed: 10, Errors: 9, ErrorKinds: map[string]uint64{"status_5xx": 9}}, ""},
		{"none sent", Result{}, "no request was sent"},
		{"all failed", Result{Requests: 5, Errors: 5, ErrorKinds: map[string]uint64{ErrorKindConnectionRefused: 3, ErrorKindTimeout: 2}},
			"none of the 5 requests succeeded (connection_refused 3, timeout 2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.res.NoneSucceeded()
			if tt.want == "" {
				if err != nil {
					t.Errorf("NoneSucceeded() = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Errorf("NoneSucceeded() = %v, want %q", err, tt.want)
			}
		})
	}
}
