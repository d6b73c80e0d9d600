package compare_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/compare/comparetest"
	"github.com/heapscope/heapscope/internal/gate"
	"github.com/heapscope/heapscope/internal/option"
	"github.com/heapscope/heapscope/internal/result"
)

func TestCompare_figuresOneRunPerSide(t *testing.T) {
	before := comparetest.Run(comparetest.RunOptions{Requests: 1000, Rate: 100, HeapInuse: 100 << 20, Sys: 200 << 20, GCPerSecond: 4, LatencyP50: 0.002})
	after := comparetest.Run(comparetest.RunOptions{Requests: 1000, Rate: 100, HeapInuse: 70 << 20, Sys: 200 << 20, GCPerSecond: 0, LatencyP50: 0.001})
	c, err := compare.Compare(
		compare.Side{Samples: []compare.Sample{comparetest.Sample("a", before, comparetest.Alloc{Function: processFn, File: cacheFile, Line: 42, Bytes: 450_000, Objects: 3000})}},
		compare.Side{Samples: []compare.Sample{comparetest.Sample("b", after, comparetest.Alloc{Function: processFn, File: cacheFile, Line: 42, Bytes: 120_000, Objects: 1000})}},
		compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Tested {
		t.Error("one run per side is tested for significance")
	}
	tests := []struct {
		name          string
		before, after float64
		relative      float64 // NaN: undefined
	}{
		{"heap_inuse_bytes", 100 << 20, 70 << 20, -0.3},
		{"sys_bytes", 200 << 20, 200 << 20, 0},
		{"bytes_per_request", 450, 120, 120.0/450 - 1},
		{"objects_per_request", 3, 1, 1.0/3 - 1},
		{"latency_p50_seconds", 0.002, 0.001, -0.5},
		{"gc_cycles_per_second", 4, 0, -1},
		{"throughput_per_second", 100, 100, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := figure(t, c, tt.name)
			if !f.Compared() || f.Before.Median != tt.before || f.After.Median != tt.after {
				t.Fatalf("before %+v after %+v, want %v → %v", f.Before, f.After, tt.before, tt.after)
			}
			if f.Delta != tt.after-tt.before || f.Relative == nil || math.Abs(*f.Relative-tt.relative) > 1e-12 {
				t.Errorf("delta %v relative %v, want %v %v", f.Delta, f.Relative, tt.after-tt.before, tt.relative)
			}
			if f.Test != nil || f.Significant() {
				t.Errorf("test %+v on single runs", f.Test)
			}
		})
	}
	if f := figure(t, c, "rss_bytes"); f.Compared() {
		t.Errorf("RSS unknown on both sides is compared: %+v", f)
	}
	if c.PerUnit != compare.PerRequest || len(c.Shrank) != 1 || c.Shrank[0].BytesBefore.Median != 450 || c.Shrank[0].BytesAfter.Median != 120 {
		t.Errorf("per %s, shrank %+v: want Process 450 → 120 B/request", c.PerUnit, c.Shrank)
	}
}

func TestCompare_relativeFromZero(t *testing.T) {
	before := comparetest.Run(comparetest.RunOptions{GCPerSecond: 0})
	after := comparetest.Run(comparetest.RunOptions{GCPerSecond: 3})
	c, err := compare.Compare(compare.Side{Samples: []compare.Sample{{Label: "a", Run: before}}},
		compare.Side{Samples: []compare.Sample{{Label: "b", Run: after}}}, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := figure(t, c, "gc_cycles_per_second")
	if f.Relative != nil || f.Delta != 3 {
		t.Errorf("relative %v delta %v, want undefined and 3", f.Relative, f.Delta)
	}
	if f := figure(t, c, "bytes_per_request"); f.Compared() {
		t.Errorf("bytes_per_request compared without load: %+v", f)
	}
	if c.PerUnit != compare.PerSecond {
		t.Errorf("per %s without load, want second", c.PerUnit)
	}
}

func TestCompare_significanceOnRepeatedRuns(t *testing.T) {
	// Process allocates 38 % fewer bytes per request after; the heap, the
	// JSON encoder and the logger only vary with noise.
	before := sideOf("before", 6, 500, 64<<20, 1)
	after := sideOf("after", 6, 310, 64<<20, 2)
	c, err := compare.Compare(before, after, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Tested {
		t.Fatal("6+6 runs are not tested")
	}
	bpr := figure(t, c, "bytes_per_request")
	if !bpr.Significant() || bpr.Test.N1 != 6 || bpr.Test.N2 != 6 || bpr.Test.P > 0.01 {
		t.Errorf("bytes_per_request test %+v, want significant with p ≤ 0.01 and n=6+6", bpr.Test)
	}
	if heap := figure(t, c, "heap_inuse_bytes"); heap.Significant() {
		t.Errorf("heap in use varies only with noise but is significant: %+v", heap.Test)
	}
	p, ok := findSite(c.Shrank, processFn)
	if !ok || !p.Significant() || p.BytesRelative == nil || math.Abs(*p.BytesRelative+0.38) > 0.05 {
		t.Errorf("Process site %+v, want significantly ~38%% fewer bytes per request", p)
	}
	for _, fn := range []string{encodeFn, logFn} {
		s, ok := findSite(append(c.Grew, c.Shrank...), fn)
		if ok && s.Significant() {
			t.Errorf("%s varies only with noise but is significant: %+v", fn, s.Test)
		}
	}

	// Three runs a side can never reach p ≤ 0.05: the change is not
	// significant, and the test says why.
	c3, err := compare.Compare(sideOf("before", 3, 500, 64<<20, 1), sideOf("after", 3, 310, 64<<20, 2), compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := figure(t, c3, "bytes_per_request"); f.Significant() || f.Test.Warning == "" {
		t.Errorf("3+3 runs: test %+v, want not significant with a warning", f.Test)
	}
}

func TestCompare_sitesAppearingInSomeRunsCountZeroElsewhere(t *testing.T) {
	run := func() *result.Run { return comparetest.Run(comparetest.RunOptions{Requests: 100}) }
	before := compare.Side{Samples: []compare.Sample{
		comparetest.Sample("a1", run(), comparetest.Alloc{Function: processFn, File: cacheFile, Line: 1, Bytes: 1000, Objects: 10}),
		comparetest.Sample("a2", run(), comparetest.Alloc{Function: logFn, File: cacheFile, Line: 2, Bytes: 500, Objects: 5}),
		comparetest.Sample("a3", run(), comparetest.Alloc{Function: processFn, File: cacheFile, Line: 1, Bytes: 3000, Objects: 30}),
	}}
	after := compare.Side{Samples: []compare.Sample{
		comparetest.Sample("b1", run(), comparetest.Alloc{Function: logFn, File: cacheFile, Line: 2, Bytes: 700, Objects: 7}),
	}}
	c, err := compare.Compare(before, after, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := findSite(c.Shrank, processFn)
	if !ok || p.BytesBefore.N != 3 || p.BytesBefore.Median != 10 || p.BytesBefore.Min != 0 || p.BytesAfter.Median != 0 {
		t.Errorf("Process %+v, want values 0, 10, 30 B/request before and 0 after", p)
	}
	l, ok := findSite(c.Grew, logFn)
	if !ok || l.BytesBefore.Median != 0 || l.BytesAfter.Median != 7 {
		t.Errorf("logger %+v, want median 0 → 7 B/request", l)
	}
}

func TestCompare_notes(t *testing.T) {
	base := comparetest.RunOptions{Requests: 1000, Rate: 100, GoVersion: "go1.26.0",
		Dependencies: []result.Module{{Path: "golang.org/x/net", Version: "v0.40.0"}, {Path: "github.com/a/b", Version: "v1.0.0"}},
		Env:          map[string]string{"GOGC": "100"}}
	tests := []struct {
		name   string
		change func(o *comparetest.RunOptions)
		kind   string
		says   string
	}{
		{"duration", func(o *comparetest.RunOptions) { o.Duration = 30 }, "duration", "10 s before, 30 s after"},
		{"target", func(o *comparetest.RunOptions) { o.URL = "http://127.0.0.1:9090" }, "target", "http://127.0.0.1:9090"},
		{"load after only", func(o *comparetest.RunOptions) { o.Requests = 0 }, "load", "load in the before run only"},
		{"rate", func(o *comparetest.RunOptions) { o.Rate = 500 }, "rate", "100 requests/s before, 500 requests/s after"},
		{"go version", func(o *comparetest.RunOptions) { o.GoVersion = "go1.25.4" }, "go_version", "go1.26.0 before, go1.25.4 after"},
		{"dependencies", func(o *comparetest.RunOptions) {
			o.Dependencies = []result.Module{{Path: "golang.org/x/net", Version: "v0.41.0"}, {Path: "github.com/c/d", Version: "v2.0.0"}}
		}, "dependencies", "github.com/a/b v1.0.0 removed, github.com/c/d v2.0.0 added, golang.org/x/net v0.40.0 → v0.41.0"},
		{"env", func(o *comparetest.RunOptions) { o.Env = map[string]string{"GOGC": "200", "GOMEMLIMIT": "1GiB"} }, "env", "GOGC 100 → 200, GOMEMLIMIT unset → 1GiB"},
		{"status", func(o *comparetest.RunOptions) { o.Status = result.StatusPartial }, "status", "after: 1 of 1 runs are not complete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := base
			tt.change(&changed)
			c, err := compare.Compare(
				compare.Side{Samples: []compare.Sample{comparetest.Sample("a", comparetest.Run(base), comparetest.Alloc{Function: processFn, Bytes: 1})}},
				compare.Side{Samples: []compare.Sample{comparetest.Sample("b", comparetest.Run(changed), comparetest.Alloc{Function: processFn, Bytes: 1})}},
				compare.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, n := range c.Notes {
				if n.Kind == tt.kind && strings.Contains(n.Text, tt.says) {
					found = true
				} else if n.Kind != tt.kind {
					t.Errorf("unexpected note %+v", n)
				}
			}
			if !found {
				t.Errorf("notes %+v lack %s saying %q", c.Notes, tt.kind, tt.says)
			}
		})
	}
	c, err := compare.Compare(
		compare.Side{Samples: []compare.Sample{comparetest.Sample("a", comparetest.Run(base), comparetest.Alloc{Function: processFn, Bytes: 1})}},
		compare.Side{Samples: []compare.Sample{comparetest.Sample("b", comparetest.Run(base), comparetest.Alloc{Function: processFn, Bytes: 1})}},
		compare.Options{})
	if err != nil || len(c.Notes) != 0 {
		t.Errorf("identical settings: notes %+v, err %v", c.Notes, err)
	}
}

func TestCompare_findings(t *testing.T) {
	leak := result.Finding{ID: "leak.inuse-growth", Severity: "high", Function: processFn, File: cacheFile, Line: 42}
	gc := result.Finding{ID: "gc.pressure", Severity: "medium"}
	leakElsewhere := leak
	leakElsewhere.Line = 90
	c, err := compare.Compare(
		compare.Side{Samples: []compare.Sample{{Label: "a", Run: comparetest.Run(comparetest.RunOptions{Findings: []result.Finding{leak, gc}})}}},
		compare.Side{Samples: []compare.Sample{{Label: "b", Run: comparetest.Run(comparetest.RunOptions{Findings: []result.Finding{gc, leakElsewhere}})}}},
		compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Appeared) != 1 || c.Appeared[0].Line != 90 || len(c.Disappeared) != 1 || c.Disappeared[0].Line != 42 {
		t.Errorf("appeared %+v disappeared %+v, want the leak moving from line 42 to 90 and gc.pressure in neither", c.Appeared, c.Disappeared)
	}
}

func TestCompare_badInput(t *testing.T) {
	one := compare.Side{Samples: []compare.Sample{{Label: "a", Run: comparetest.Run(comparetest.RunOptions{})}}}
	noAllocSpace := comparetest.Allocs()
	noAllocSpace.SampleType = noAllocSpace.SampleType[:1]
	tests := []struct {
		name          string
		before, after compare.Side
		opts          compare.Options
		want          string
	}{
		{"empty before", compare.Side{}, one, compare.Options{}, "before side: no runs"},
		{"empty after", one, compare.Side{}, compare.Options{}, "after side: no runs"},
		{"nil run", one, compare.Side{Samples: []compare.Sample{{Label: "x"}}}, compare.Options{}, "run 1 (x): no result"},
		{"bad alpha", one, one, compare.Options{Alpha: 2}, "compare: Alpha 2: give a level between 0 and 1"},
		{"profile without alloc_space", one, compare.Side{Samples: []compare.Sample{{Label: "x", Run: comparetest.Run(comparetest.RunOptions{}), Allocs: noAllocSpace}}}, compare.Options{}, "allocs-delta profile of x"},
		{"gate on missing figure", one, one, compare.Options{Gates: []gate.Gate{mustGate(t, "bytes_per_request>+5%")}}, "bytes_per_request is missing on both sides"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := compare.Compare(tt.before, tt.after, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
			if strings.Contains(tt.name, "empty") && !errors.Is(err, compare.ErrEmptySide) {
				t.Errorf("error %v does not wrap ErrEmptySide", err)
			}
		})
	}
}

func TestOptions_Validate(t *testing.T) {
	tests := []struct {
		name  string
		opts  compare.Options
		field string // "" for valid options
		want  string
	}{
		{"valid", compare.Options{Alpha: 0.05, Sites: 1}, "", ""},
		{"zero sites", compare.Options{Alpha: 0.05}, "Sites", "Sites 0: give a number ≥ 1"},
		{"zero alpha", compare.Options{Sites: 10}, "Alpha", "Alpha 0: give a level between 0 and 1, such as 0.05"},
		{"alpha of 1", compare.Options{Alpha: 1, Sites: 10}, "Alpha", "Alpha 1: give a level between 0 and 1, such as 0.05"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			var oe *option.Error
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.field != "" && (!errors.As(err, &oe) || oe.Field != tt.field || err.Error() != tt.want):
				t.Errorf("Validate() = %v, want the %s error %q", err, tt.field, tt.want)
			}
		})
	}
}

func BenchmarkCompare(b *testing.B) {
	before := sideOf("before", 6, 500, 64<<20, 1)
	after := sideOf("after", 6, 310, 64<<20, 2)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compare.Compare(before, after, compare.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
