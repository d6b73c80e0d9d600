package bench

import (
	"math"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/gate"
)

func TestParseGate_malformed(t *testing.T) {
	cases := []struct {
		expr, why string
	}{
		{"", "no > or <"},
		{"B/op", "no > or <"},
		{"B/op=5%", "no > or <"},
		{">5%", "no unit"},
		{"Process:>5%", "no unit"},
		{"B/op>", "no threshold"},
		{"B/op>%", "no threshold"},
		{"B/op>five%", "not a number"},
		{"B/op>+5%%", "not a number"},
		{"B/op>inf", "not a number"},
		{"B/op>NaN%", "not a number"},
		{"B/op>0x10", "not a number"},
		{"B/op>=5%", ">= or <="},
		{"B/op<>5%", ">= or <="},
		{"B op>5%", "space or an operator"},
		{"Process(:B/op>5%", "not a regular expression"},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			g, err := ParseGate(c.expr)
			if err == nil {
				t.Fatalf("ParseGate = %+v, want an error", g)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.why) {
				t.Errorf("error %q does not say %q", msg, c.why)
			}
			// Every error shows the accepted form.
			if !strings.Contains(msg, "[NAME_REGEX:]UNIT>THRESHOLD") || !strings.Contains(msg, "'B/op>+5%'") {
				t.Errorf("error %q does not show the accepted form", msg)
			}
		})
	}
}

// TestGate_selects checks that a gate's name is searched for in the
// benchmark's name as the table shows it and with its Benchmark prefix.
func TestGate_selects(t *testing.T) {
	g := mustGates(t, "^Worker_Process-:B/op>1%", "^BenchmarkWorker:B/op>1%", "Evicting:B/op>1%")
	cases := []struct {
		gate  int
		name  string
		match bool
	}{
		{0, "Worker_Process-2", true},
		{0, "Worker_ProcessParallel-2", false},
		{1, "Worker_Process-2", true},
		{1, "Handler_Get", false},
		{2, "Worker_ProcessEvicting/size=10-2", true},
		{2, "Worker_Process", false},
	}
	for _, c := range cases {
		if got := selects(g[c.gate], c.name); got != c.match {
			t.Errorf("%s selects %s = %v, want %v", g[c.gate], c.name, got, c.match)
		}
	}
}

// TestCompare_gateDecisions runs gates on crafted inputs whose outcomes
// are known: a gate fails only on a change both significant and beyond its
// threshold.
func TestCompare_gateDecisions(t *testing.T) {
	const n = 10
	cases := []struct {
		name        string
		old, new    []float64
		unit        string
		gate        string
		outcome     gate.Outcome
		significant bool
		reason      string
	}{
		{"significant small regression under threshold passes",
			spread(1000, 0.001, n), spread(1020, 0.001, n), "B/op", "B/op>+5%", gate.Pass, true, "within +5%"},
		{"significant large regression fails",
			spread(1000, 0.001, n), spread(1200, 0.001, n), "B/op", "B/op>+5%", gate.Fail, true, "B/op +20.00% is beyond +5% and significant (p=0.000 n=10)"},
		{"large but not significant warns",
			spread(1000, 0.5, n), append(spread(1000, 0.5, n-1), 5000), "sec/op", "sec/op>+5%", gate.Warn, false, "but not significant"},
		{"improvement passes",
			spread(1000, 0.001, n), spread(500, 0.001, n), "B/op", "B/op>+5%", gate.Pass, true, "B/op -50.00% is within +5%"},
		{"exactly at the threshold passes",
			repeat(100, n), repeat(105, n), "B/op", "B/op>+5%", gate.Pass, true, "within"},
		{"any allocation more fails a +0% gate",
			repeat(2, n), repeat(3, n), "allocs/op", "allocs/op>+0%", gate.Fail, true, "+50.00%"},
		{"from zero allocations",
			repeat(0, n), repeat(1, n), "allocs/op", "allocs/op>+0%", gate.Fail, true, "+∞%"},
		{"absolute threshold in ns",
			spread(100, 0.001, n), spread(160, 0.001, n), "ns/op", "ns/op>50", gate.Fail, true, "sec/op +60.00n sec/op is beyond +50 ns/op"},
		{"absolute threshold not reached",
			spread(100, 0.001, n), spread(140, 0.001, n), "ns/op", "ns/op>50", gate.Pass, true, "within +50 ns/op"},
		{"lower is worse: throughput drop fails",
			spread(100, 0.001, n), spread(80, 0.001, n), "MB/s", "MB/s<-5%", gate.Fail, true, "B/s -20.00% is beyond -5%"},
		{"lower is worse: throughput rise passes",
			spread(100, 0.001, n), spread(120, 0.001, n), "MB/s", "MB/s<-5%", gate.Pass, true, "within -5%"},
		{"custom unit",
			spread(10, 0.001, n), spread(12, 0.001, n), "frames/op", "frames/op>+10%", gate.Fail, true, "frames/op +20.00%"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := crafted("example.com/p", "Process", series{c.unit, c.old})
			new := crafted("example.com/p", "Process", series{c.unit, c.new})
			rep := mustCompare(t, named("old", old), named("new", new), Options{Gates: mustGates(t, c.gate)})
			if len(rep.Decisions) != 1 {
				t.Fatalf("%d decisions, want 1: %+v", len(rep.Decisions), rep.Decisions)
			}
			d := rep.Decisions[0]
			if d.Outcome != c.outcome || d.Significant != c.significant {
				t.Errorf("outcome %s significant %v, want %s %v: %s", d.Outcome, d.Significant, c.outcome, c.significant, d.Reason)
			}
			if !strings.Contains(d.Reason, c.reason) {
				t.Errorf("reason %q does not say %q", d.Reason, c.reason)
			}
			if got := rep.Failed(); got != (c.outcome == gate.Fail) {
				t.Errorf("Failed() = %v", got)
			}
			if d.Benchmark != "Process-2" || configGet(d.Config, "pkg") != "example.com/p" {
				t.Errorf("decision on %s %v, want Process-2 of example.com/p", d.Benchmark, d.Config)
			}
		})
	}
}

func TestCompare_gateSelection(t *testing.T) {
	in := func(bytes float64) string {
		return crafted("p", "Process", series{"B/op", repeat(bytes, 10)}) +
			strings.ReplaceAll(crafted("p", "Parse", series{"B/op", repeat(bytes, 10)}), "goos: linux\ngoarch: amd64\npkg: p\n", "")
	}
	rep := mustCompare(t, named("old", in(100)), named("new", in(200)), Options{
		Gates: mustGates(t, "Process:B/op>+5%", "B/op>+500%", "B/op>+5%"),
	})
	var got []string
	for _, d := range rep.Decisions {
		got = append(got, d.Gate+" "+d.Benchmark+" "+string(d.Outcome))
	}
	want := []string{
		"Process:B/op>+5% Process-2 fail",
		"B/op>+500% Process-2 pass", "B/op>+500% Parse-2 pass",
		"B/op>+5% Process-2 fail", "B/op>+5% Parse-2 fail",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("decisions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(rep.Failures()); n != 3 {
		t.Errorf("%d failures, want 3", n)
	}
}

func TestCompare_gateDirectionWarning(t *testing.T) {
	old := crafted("p", "A", series{"MB/s", spread(100, 0.001, 10)})
	new := crafted("p", "A", series{"MB/s", spread(90, 0.001, 10)})
	rep := mustCompare(t, named("old", old), named("new", new), Options{Gates: mustGates(t, "MB/s>+5%")})
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0].Error(), "fails on improvements: B/s is better when higher") {
		t.Errorf("warnings %v, want one about the gate's direction", rep.Warnings)
	}
}

func TestCompareSamples(t *testing.T) {
	tests := []struct {
		name        string
		old, new    []float64
		significant bool
		relative    float64
	}{
		{"clear drop", []float64{100, 101, 99, 100, 102, 98}, []float64{60, 61, 59, 62, 60, 61}, true, 60.5/100 - 1},
		{"noise", []float64{100, 101, 99, 100}, []float64{101, 99, 100, 100}, false, 0},
		{"too few runs", []float64{100, 100}, []float64{50, 50}, false, -0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, n, d := CompareSamples(tt.old, tt.new, 0, 0)
			if d.Significant != tt.significant {
				t.Errorf("significant = %v (p=%v), want %v", d.Significant, d.P, tt.significant)
			}
			if math.Abs(d.Relative-tt.relative) > 1e-9 {
				t.Errorf("relative = %v, want %v", d.Relative, tt.relative)
			}
			if o.N != len(tt.old) || n.N != len(tt.new) || d.N1 != o.N || d.N2 != n.N {
				t.Errorf("n = %d+%d, delta %d+%d", o.N, n.N, d.N1, d.N2)
			}
		})
	}
}
