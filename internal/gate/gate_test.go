package gate

import (
	"math"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		expr      string
		name      string // regexp, "" for none
		unit      string
		higher    bool
		threshold float64
		relative  bool
	}{
		{"B/op>+5%", "", "B/op", true, 0.05, true},
		{"B/op>5%", "", "B/op", true, 0.05, true},
		{" B/op > +5 % ", "", "B/op", true, 0.05, true},
		{"Process.*:allocs/op>+0%", "Process.*", "allocs/op", true, 0, true},
		{"sec/op>+10%", "", "sec/op", true, 0.10, true},
		{"ns/op>+10%", "", "sec/op", true, 0.10, true},
		{"ns/op>50", "", "sec/op", true, 50e-9, false},
		{"B/op>1024", "", "B/op", true, 1024, false},
		{"MB/s<-5%", "", "B/s", false, -0.05, true},
		{"MB/s<5%", "", "B/s", false, -0.05, true},
		{"MB/s<-2", "", "B/s", false, -2e6, false},
		{"B/op>-5%", "", "B/op", true, -0.05, true},
		{"B/op>1.5e1%", "", "B/op", true, 0.15, true},
		{"(?:Get|Put):B/op>+1%", "(?:Get|Put)", "B/op", true, 0.01, true},
		{"(?P<x>Get):B/op>+1%", "(?P<x>Get)", "B/op", true, 0.01, true},
		{"custom-unit>+3%", "", "custom-unit", true, 0.03, true},
		{":B/op>+1%", "", "B/op", true, 0.01, true},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			g, err := Parse(c.expr)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			name := ""
			if g.Name != nil {
				name = g.Name.String()
			}
			if name != c.name || g.Unit != c.unit || g.Higher != c.higher || g.Relative != c.relative ||
				math.Abs(g.Threshold-c.threshold) > 1e-15 {
				t.Errorf("got name %q unit %q higher %v threshold %v relative %v, want %q %q %v %v %v",
					name, g.Unit, g.Higher, g.Threshold, g.Relative, c.name, c.unit, c.higher, c.threshold, c.relative)
			}
			if g.String() != strings.TrimSpace(c.expr) {
				t.Errorf("String() = %q, want the expression as written", g.String())
			}
		})
	}
}

func TestParse_malformed(t *testing.T) {
	cases := []struct {
		expr, why string
	}{
		{"", "no > or <"},
		{"B/op=5%", "no > or <"},
		{">5%", "no unit"},
		{"B/op>", "no threshold"},
		{"B/op>five%", "not a number"},
		{"B/op>inf", "not a number"},
		{"B/op>=5%", ">= or <="},
		{"B op>5%", "space or an operator"},
		{"Process(:B/op>5%", "not a regular expression"},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			g, err := Parse(c.expr)
			if err == nil {
				t.Fatalf("Parse = %+v, want an error", g)
			}
			if msg := err.Error(); !strings.Contains(msg, c.why) || !strings.HasPrefix(msg, "gate ") {
				t.Errorf("error %q does not name the gate and say %q", msg, c.why)
			}
		})
	}
}

func TestGate_Matches(t *testing.T) {
	cases := []struct {
		expr, name string
		match      bool
	}{
		{"B/op>1%", "anything", true},
		{"Process:B/op>1%", "Worker_Process-2", true},
		{"^Process:B/op>1%", "Worker_Process-2", false},
		{"Evicting:B/op>1%", "Worker_Process", false},
	}
	for _, c := range cases {
		g, err := Parse(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Matches(c.name); got != c.match {
			t.Errorf("%s matches %s = %v, want %v", c.expr, c.name, got, c.match)
		}
	}
}

func TestGate_Beyond(t *testing.T) {
	cases := []struct {
		expr   string
		change float64
		beyond bool
	}{
		{"B/op>+5%", 0.06, true},
		{"B/op>+5%", 0.05, false},
		{"B/op>+5%", 105.0/100 - 1, false}, // equal up to rounding
		{"B/op>+5%", -0.5, false},
		{"B/op>+0%", math.Inf(1), true},
		{"B/op>+5%", math.NaN(), false},
		{"B/s<-5%", -0.06, true},
		{"B/s<-5%", 0.5, false},
		{"B/s<-5%", math.Inf(-1), true},
		{"ns/op>50", 60e-9, true},
		{"ns/op>50", 40e-9, false},
	}
	for _, c := range cases {
		g, err := Parse(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Beyond(c.change); got != c.beyond {
			t.Errorf("%s: Beyond(%v) = %v, want %v", c.expr, c.change, got, c.beyond)
		}
	}
}

func TestGate_Display(t *testing.T) {
	cases := map[string]string{
		"B/op>+5%":   "+5%",
		"B/op>5%":    "+5%",
		"MB/s<5%":    "-5%",
		"ns/op>50":   "+50 ns/op",
		"B/op>-2.5%": "-2.5%",
	}
	for expr, want := range cases {
		g, err := Parse(expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Display(); got != want {
			t.Errorf("%s: Display() = %q, want %q", expr, got, want)
		}
	}
}
