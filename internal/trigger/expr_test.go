package trigger

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/units"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in        string
		metric    Metric
		op        Op
		unit      Unit
		threshold float64
		str       string
	}{
		{"memory>=80%", Memory, GE, Percent, 80, "memory>=80%"},
		{"  memory >= 80 % ", Memory, GE, Percent, 80, "memory>=80%"},
		{"memory>=1.5GiB", Memory, GE, Bytes, 1.5 * (1 << 30), "memory>=1.5GiB"},
		{"memory > 512 MB", Memory, GT, Bytes, 512e6, "memory>512MB"},
		{"memory<10%", Memory, LT, Percent, 10, "memory<10%"},
		{"rss>=1GiB", RSS, GE, Bytes, 1 << 30, "rss>=1GiB"},
		{"rss>=01.50KiB", RSS, GE, Bytes, 1536, "rss>=1.5KiB"},
		{"rss<=4096B", RSS, LE, Bytes, 4096, "rss<=4096B"},
		{"rss>=2TB", RSS, GE, Bytes, 2e12, "rss>=2TB"},
		{"gomemlimit>=90%", GoMemLimit, GE, Percent, 90, "gomemlimit>=90%"},
		{"gomemlimit>=120%", GoMemLimit, GE, Percent, 120, "gomemlimit>=120%"},
		{"rss_high>=64MiB", RSSHigh, GE, Bytes, 64 << 20, "rss_high>=64MiB"},
		{"rss_high>100MB", RSSHigh, GT, Bytes, 100e6, "rss_high>100MB"},
		{"rss_high>=64Mi", RSSHigh, GE, Bytes, 64 << 20, "rss_high>=64Mi"},
		{"memory>=1gib", Memory, GE, Bytes, 1 << 30, "memory>=1gib"},
		{"heap_time_to_limit<=6h", HeapTimeToLimit, LE, Seconds, 6 * 3600, "heap_time_to_limit<=6h"},
		{"heap_time_to_limit<90m", HeapTimeToLimit, LT, Seconds, 90 * 60, "heap_time_to_limit<1h30m"},
		{"heap_time_to_limit<=1h30m", HeapTimeToLimit, LE, Seconds, 5400, "heap_time_to_limit<=1h30m"},
		{"heap_time_to_limit<=30d", HeapTimeToLimit, LE, Seconds, 30 * 86400, "heap_time_to_limit<=30d"},
		{"heap_time_to_limit<=1d12h", HeapTimeToLimit, LE, Seconds, 36 * 3600, "heap_time_to_limit<=36h"},
		{"heap_time_to_limit<=2w", HeapTimeToLimit, LE, Seconds, 14 * 86400, "heap_time_to_limit<=14d"},
		{"heap_time_to_limit<=1y", HeapTimeToLimit, LE, Seconds, 365 * 86400, "heap_time_to_limit<=365d"},
		{"heap_time_to_limit<=1.5d", HeapTimeToLimit, LE, Seconds, 36 * 3600, "heap_time_to_limit<=36h"},
		{"heap_time_to_limit <= 45s", HeapTimeToLimit, LE, Seconds, 45, "heap_time_to_limit<=45s"},
		{"heap_time_to_limit<=1500ms", HeapTimeToLimit, LE, Seconds, 1.5, "heap_time_to_limit<=1.5s"},
		{"goroutines>=10000", Goroutines, GE, Count, 10000, "goroutines>=10000"},
		{"goroutines<5", Goroutines, LT, Count, 5, "goroutines<5"},
		{"goroutine_growth>=1000", GoroutineGrowth, GE, Count, 1000, "goroutine_growth>=1000"},
		{"gc_cpu>=25%", GCCPU, GE, Percent, 25, "gc_cpu>=25%"},
		{"gc_cpu>=2.5%", GCCPU, GE, Percent, 2.5, "gc_cpu>=2.5%"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			e, err := Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if e.Metric != tt.metric || e.Op != tt.op || e.Unit != tt.unit || e.Threshold != tt.threshold {
				t.Errorf("Parse = %s %s %g %v, want %s %s %g %v", e.Metric, e.Op, e.Threshold, e.Unit, tt.metric, tt.op, tt.threshold, tt.unit)
			}
			if got := e.String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
			again, err := Parse(e.String())
			if err != nil || again != e {
				t.Errorf("Parse(%q) = %+v, %v, want %+v", e.String(), again, err, e)
			}
		})
	}
}

func TestParse_errors(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"memory>=80", `trigger "memory>=80": memory needs a percentage of the limit or a size, e.g. memory>=80%`},
		{"memory 80%", `trigger "memory 80%": no comparison (want >=, >, <= or <), e.g. memory>=80%`},
		{"memory==80%", `trigger "memory==80%": comparison "==" not supported (want >=, >, <= or <)`},
		{"memory=>80%", `trigger "memory=>80%": comparison "=>" not supported (want >=, >, <= or <)`},
		{"memory!=80%", `trigger "memory!=80%": comparison "!=" not supported (want >=, >, <= or <)`},
		{">=80%", `trigger ">=80%": no metric before >= (want one of memory, rss, gomemlimit, rss_high, heap_time_to_limit, goroutines, goroutine_growth or gc_cpu)`},
		{"mem>=80%", `trigger "mem>=80%": unknown metric "mem" (want one of memory, rss, gomemlimit, rss_high, heap_time_to_limit, goroutines, goroutine_growth or gc_cpu)`},
		{"Memory>=80%", `trigger "Memory>=80%": unknown metric "Memory" (want one of memory, rss, gomemlimit, rss_high, heap_time_to_limit, goroutines, goroutine_growth or gc_cpu)`},
		{"memory>=", `trigger "memory>=": no value after >=: memory needs a percentage of the limit or a size, e.g. memory>=80%`},
		{"memory>=x%", `trigger "memory>=x%": "x%" is not a number: memory needs a percentage of the limit or a size, e.g. memory>=80%`},
		{"memory>=1.2.3%", `trigger "memory>=1.2.3%": "1.2.3" is not a number: memory needs a percentage of the limit or a size, e.g. memory>=80%`},
		{"memory>=-5%", `trigger "memory>=-5%": "-5%" is not a number: memory needs a percentage of the limit or a size, e.g. memory>=80%`},
		{"memory>=120%", `trigger "memory>=120%": 120% is above 100%: memory needs a percentage of the limit or a size, e.g. memory>=80%`},
		{"memory>=1.5Gbit", `trigger "memory>=1.5Gbit": unknown unit "Gbit" in "1.5Gbit" (want % or a size unit: B, KiB, MiB, GiB, TiB (or Ki, Mi, Gi, Ti), KB, MB, GB or TB)`},
		{"rss>=80%", `trigger "rss>=80%": rss needs a size, e.g. rss>=1GiB`},
		{"rss>=1000", `trigger "rss>=1000": rss needs a size, e.g. rss>=1GiB`},
		{"gomemlimit>=1GiB", `trigger "gomemlimit>=1GiB": gomemlimit needs a percentage of GOMEMLIMIT, e.g. gomemlimit>=90%`},
		{"rss_high<=64MiB", `trigger "rss_high<=64MiB": rss_high takes >= or >, not <=, e.g. rss_high>=64MiB`},
		{"rss_high>=0MiB", `trigger "rss_high>=0MiB": rss_high needs a step above 0, e.g. rss_high>=64MiB`},
		{"heap_time_to_limit>=6h", `trigger "heap_time_to_limit>=6h": heap_time_to_limit takes <= or <, not >=, e.g. heap_time_to_limit<=6h`},
		{"heap_time_to_limit<=6", `trigger "heap_time_to_limit<=6": "6" is not a duration: 6 has no unit (want ms, s, m, h, d, w or y): heap_time_to_limit needs a duration, e.g. heap_time_to_limit<=6h`},
		{"heap_time_to_limit<=6x", `trigger "heap_time_to_limit<=6x": "6x" is not a duration: unknown unit "x" (want ms, s, m, h, d, w or y): heap_time_to_limit needs a duration, e.g. heap_time_to_limit<=6h`},
		{"heap_time_to_limit<=soon", `trigger "heap_time_to_limit<=soon": "soon" is not a duration: heap_time_to_limit needs a duration, e.g. heap_time_to_limit<=6h`},
		{"heap_time_to_limit<=0s", `trigger "heap_time_to_limit<=0s": heap_time_to_limit needs a duration above 0, e.g. heap_time_to_limit<=6h`},
		{"heap_time_to_limit<=999999d", `trigger "heap_time_to_limit<=999999d": "999999d" is out of range: heap_time_to_limit needs a duration, e.g. heap_time_to_limit<=6h`},
		{"goroutines>=1.5", `trigger "goroutines>=1.5": 1.5 is not a whole number: goroutines needs a count, e.g. goroutines>=10000`},
		{"goroutines>=10k", `trigger "goroutines>=10k": unknown unit "k" in "10k" (want % or a size unit: B, KiB, MiB, GiB, TiB (or Ki, Mi, Gi, Ti), KB, MB, GB or TB)`},
		{"goroutine_growth>=5%", `trigger "goroutine_growth>=5%": goroutine_growth needs a count, e.g. goroutine_growth>=1000`},
		{"gc_cpu>=0.25", `trigger "gc_cpu>=0.25": gc_cpu needs a percentage of CPU time, e.g. gc_cpu>=25%`},
		{"goroutines>=99999999999999999999", `trigger "goroutines>=99999999999999999999": 99999999999999999999 is out of range: goroutines needs a count, e.g. goroutines>=10000`},
		{"", `trigger "": no comparison (want >=, >, <= or <), e.g. memory>=80%`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := Parse(tt.in)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse(%q) error\n got %v\nwant %s", tt.in, err, tt.want)
			}
		})
	}
}

func TestExpr_text(t *testing.T) {
	var v struct {
		Triggers []Expr `json:"triggers"`
	}
	if err := json.Unmarshal([]byte(`{"triggers": ["memory >= 80%", "heap_time_to_limit<=1d"]}`), &v); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if want := `{"triggers":["memory>=80%","heap_time_to_limit<=1d"]}` + "\n"; out.String() != want {
		t.Errorf("round trip through JSON = %s, want %s", out.String(), want)
	}
	err := json.Unmarshal([]byte(`{"triggers": ["memory>=80"]}`), &v)
	if err == nil || !strings.Contains(err.Error(), `trigger "memory>=80": memory needs`) {
		t.Errorf("unmarshal of a bad expression: %v", err)
	}
}

func TestMetrics(t *testing.T) {
	for _, m := range Metrics() {
		spec, ok := specOf(m)
		if !ok {
			t.Fatalf("%s has no spec", m)
		}
		// Each metric's own example parses.
		if _, err := Parse(example(spec)); err != nil {
			t.Errorf("%s: example %q: %v", m, example(spec), err)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for _, d := range []time.Duration{time.Nanosecond, 1500 * time.Millisecond, time.Minute, 90 * time.Minute,
		time.Hour + 500*time.Millisecond, 24 * time.Hour, 25 * time.Hour, 7 * 24 * time.Hour, units.MaxDuration} {
		got, err := units.ParseDuration(formatDuration(d))
		if err != nil || got != d {
			t.Errorf("units.ParseDuration(formatDuration(%v) = %q) = %v, %v", d, formatDuration(d), got, err)
		}
	}
}

// FuzzParse checks that Parse never panics, and that an expression it
// accepts prints as one that parses back to the same expression.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"memory>=80%", "memory >= 1.5 GiB", "rss_high>=64MiB", "heap_time_to_limit<=1d12h",
		"goroutines>=10000", "gc_cpu>=25%", "memory>=80", "x<<=y", "heap_time_to_limit<=.5h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("trigger %q: ", s)) || strings.Contains(err.Error(), "\n") && !strings.Contains(s, "\n") {
				t.Fatalf("error %q does not quote the expression on one line", err)
			}
			return
		}
		again, err := Parse(e.String())
		if err != nil || again != e {
			t.Fatalf("Parse(%q) = %+v; its String %q parses to %+v, %v", s, e, e.String(), again, err)
		}
		if e.Threshold < 0 || e.Threshold != e.Threshold {
			t.Fatalf("Parse(%q): threshold %g", s, e.Threshold)
		}
	})
}

func ExampleParse() {
	e, err := Parse("memory >= 80%")
	fmt.Println(e, e.Metric, e.Op, e.Threshold, e.Unit, err)
	_, err = Parse("memory>=80")
	fmt.Println(err)
	// Output:
	// memory>=80% memory >= 80 % <nil>
	// trigger "memory>=80": memory needs a percentage of the limit or a size, e.g. memory>=80%
}
