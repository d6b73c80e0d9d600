package compare_test

import (
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/gate"
)

func mustGate(t testing.TB, expr string) gate.Gate {
	t.Helper()
	g, err := compare.ParseGate(expr)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestParseGate(t *testing.T) {
	tests := []struct {
		expr string
		want string // error substring, "" for none
	}{
		{"bytes_per_request>+5%", ""},
		{"gc_pause_p99_seconds>0.002", ""},
		{"throughput_per_second<-10%", ""},
		{"Process:bytes_per_request>+0%", ""},
		{"Process:objects_per_request>1", ""},
		{"B/op>+5%", `"B/op" is not a headline figure; choose one of heap_inuse_bytes,`},
		{"Process:heap_inuse_bytes>+5%", "gates bytes_per_request or objects_per_request, not heap_inuse_bytes"},
		{"bytes_per_request", "no > or < between the unit and the threshold; want [FUNCTION_REGEX:]FIGURE>THRESHOLD"},
		{"bytes_per_request>=5%", "a single > or < compares"},
		{"(:bytes_per_request>5%", "is not a regular expression"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			_, err := compare.ParseGate(tt.expr)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}

func TestCompare_gateDecisions(t *testing.T) {
	// bytes_per_request falls 38 % (500 → 310 in Process, 240 elsewhere).
	tests := []struct {
		name   string
		gate   string
		runs   int
		want   gate.Outcome
		saying string
	}{
		{"single runs, regression beyond threshold fails", "bytes_per_request<-5%", 1, gate.Fail, "one run per side"},
		{"single runs, within threshold passes", "bytes_per_request>+5%", 1, gate.Pass, "is within +5%"},
		{"repeated runs, significant and beyond fails", "bytes_per_request<-5%", 6, gate.Fail, "significant (p=0.002 n=6+6)"},
		{"repeated runs, beyond but too few runs warns", "bytes_per_request<-5%", 3, gate.Warn, "not significant"},
		{"repeated runs, significant but within passes", "bytes_per_request<-50%", 6, gate.Pass, "is within -50%"},
		{"noise beyond a tight threshold is not significant", "heap_inuse_bytes>+0.1%", 6, gate.Pass, ""},
		{"site gate: Process shrank", "Process:bytes_per_request<-30%", 6, gate.Fail, "bytes_per_request of Process"},
		{"site gate: logger unchanged", "logRequest:bytes_per_request>+10%", 6, gate.Pass, ""},
		{"absolute threshold", "bytes_per_request<-100", 1, gate.Fail, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := compare.Compare(sideOf("before", tt.runs, 500, 64<<20, 1), sideOf("after", tt.runs, 310, 64<<20, 2),
				compare.Options{Gates: []gate.Gate{mustGate(t, tt.gate)}})
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Decisions) != 1 {
				t.Fatalf("decisions %+v", c.Decisions)
			}
			d := c.Decisions[0]
			if tt.name == "noise beyond a tight threshold is not significant" {
				// Noise may fall either side of the threshold: it must
				// never fail.
				if d.Outcome == gate.Fail {
					t.Errorf("decision %+v", d)
				}
				return
			}
			if d.Outcome != tt.want || !strings.Contains(d.Reason, tt.saying) {
				t.Errorf("outcome %s (%s), want %s saying %q", d.Outcome, d.Reason, tt.want, tt.saying)
			}
			if c.Failed() != (tt.want == gate.Fail) {
				t.Errorf("Failed() = %v", c.Failed())
			}
		})
	}
}

func TestCompare_siteGateMatchesNothing(t *testing.T) {
	_, err := compare.Compare(sideOf("before", 1, 500, 1, 1), sideOf("after", 1, 310, 1, 2),
		compare.Options{Gates: []gate.Gate{mustGate(t, "NoSuchFunc:bytes_per_request>+5%")}})
	if err == nil || !strings.Contains(err.Error(), `"NoSuchFunc" matches no function`) {
		t.Fatalf("error %v", err)
	}
}

func TestComparison_GateError(t *testing.T) {
	c := &compare.Comparison{Decisions: []compare.Decision{
		{Gate: "bytes_per_request>+5%", Outcome: gate.Pass},
		{Gate: "gc_pause_p99_seconds>0.002", Outcome: gate.Fail, Reason: "0.0031 (+55%)"},
	}}
	if err := c.GateError(); err == nil || err.Error() != "1 of 2 gates failed: gc_pause_p99_seconds>0.002: 0.0031 (+55%)" {
		t.Errorf("GateError = %v", err)
	}
	c.Decisions = c.Decisions[:1]
	if err := c.GateError(); err != nil {
		t.Errorf("GateError = %v with no failed gate", err)
	}
}
