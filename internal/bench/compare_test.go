package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/gate"
	"github.com/heapscope/heapscope/internal/goldenfile"
)

// goldenCases compare real go test -bench outputs of the example services.
var goldenCases = []struct {
	name     string
	old, new string
	opts     func(t testing.TB) Options
}{
	{
		// The fix, proved: the same benchmark in the leaky and the
		// optimized package.
		name: "leaky-vs-optimized",
		old:  "leakycache.txt", new: "optimizedcache.txt",
		opts: func(t testing.TB) Options {
			return Options{Ignore: "pkg", Gates: mustGates(t, "B/op>+5%", "Process:allocs/op>+0%", "sec/op>+10%")}
		},
	},
	{
		// The fix undone: the gates fail.
		name: "optimized-vs-leaky",
		old:  "optimizedcache.txt", new: "leakycache.txt",
		opts: func(t testing.TB) Options {
			return Options{Ignore: "pkg", Gates: mustGates(t, "B/op>+5%", "Process:allocs/op>+0%")}
		},
	},
	{
		// Two runs of the same code, two packages and two GOMAXPROCS:
		// several configurations, noise only.
		name: "services",
		old:  "services-a.txt", new: "services-b.txt",
		opts: func(t testing.TB) Options {
			return Options{Gates: mustGates(t, "B/op>+5%", "Evicting:sec/op>+1%")}
		},
	},
}

// TestCompare_golden checks the reports as bench compare --format json
// prints them; report renders them for people.
func TestCompare_golden(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			rep := mustCompare(t, benchInput(t, c.old), benchInput(t, c.new), c.opts(t))
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, "testdata/golden/"+c.name+".json", buf.Bytes())
		})
	}
}

func TestCompare_leakyVsOptimized(t *testing.T) {
	rep := mustCompare(t, benchInput(t, "leakycache.txt"), benchInput(t, "optimizedcache.txt"), Options{Ignore: "pkg"})
	want := map[string]struct{ old, new float64 }{
		"B/op":      {160, 22},
		"allocs/op": {2, 1},
	}
	for _, tab := range rep.Tables {
		w, ok := want[tab.Unit]
		if !ok {
			continue
		}
		delete(want, tab.Unit)
		if len(tab.Rows) != 1 {
			t.Fatalf("%s: %d rows, want 1", tab.Unit, len(tab.Rows))
		}
		r := tab.Rows[0]
		if r.Name != "Worker_Process-2" {
			t.Errorf("%s: row %q, want Worker_Process-2", tab.Unit, r.Name)
		}
		if r.Old.Center != w.old || r.New.Center != w.new {
			t.Errorf("%s: %v → %v, want %v → %v", tab.Unit, r.Old.Center, r.New.Center, w.old, w.new)
		}
		if !r.Delta.Significant || r.Delta.Relative >= 0 {
			t.Errorf("%s: delta %+v, want a significant fall", tab.Unit, r.Delta)
		}
		if got, want := r.Delta.Relative, w.new/w.old-1; math.Abs(got-want) > 1e-12 {
			t.Errorf("%s: relative %v, want %v", tab.Unit, got, want)
		}
		if r.Old.N != 10 || r.New.N != 10 || r.Old.Iters != 20000 {
			t.Errorf("%s: n %d+%d iters %d, want 10+10 and 20000", tab.Unit, r.Old.N, r.New.N, r.Old.Iters)
		}
	}
	if len(want) > 0 {
		t.Errorf("no table for %v", want)
	}
	if len(rep.Warnings) != 0 || len(rep.Errors) != 0 {
		t.Errorf("warnings %v, errors %v; want none", rep.Warnings, rep.Errors)
	}
}

func TestCompare_configurations(t *testing.T) {
	rep := mustCompare(t, benchInput(t, "services-a.txt"), benchInput(t, "services-b.txt"), Options{})
	// Two packages × three units.
	if len(rep.Tables) != 6 {
		t.Fatalf("%d tables, want 6", len(rep.Tables))
	}
	pkgs := map[string]int{}
	for _, tab := range rep.Tables {
		pkgs[configGet(tab.Config, "pkg")] += len(tab.Rows)
		if configGet(tab.Config, "goos") != "linux" || configGet(tab.Config, "cpu") == "" {
			t.Errorf("table config %v lacks goos or cpu", tab.Config)
		}
		if tab.Geomean == nil {
			t.Errorf("%s table without geomean", tab.Unit)
		}
	}
	const leaky, optimized = "github.com/heapscope/heapscope/examples/leakycache", "github.com/heapscope/heapscope/examples/optimizedcache"
	// leakycache: Process and ProcessParallel at -cpu 1 and 2; optimizedcache
	// adds ProcessEvicting.
	if pkgs[leaky] != 3*4 || pkgs[optimized] != 3*6 {
		t.Errorf("rows per package %v, want 12 and 18", pkgs)
	}
	names := map[string]bool{}
	for _, r := range rep.Tables[0].Rows {
		names[r.Name] = true
	}
	for _, n := range []string{"Worker_Process", "Worker_Process-2", "Worker_ProcessParallel", "Worker_ProcessParallel-2"} {
		if !names[n] {
			t.Errorf("row %s missing from %v", n, names)
		}
	}
}

func TestCompare_badInput(t *testing.T) {
	leaky := string(readBench(t, "leakycache.txt"))
	cases := []struct {
		name     string
		old, new string
		opts     Options
		is       error
		want     []string
	}{
		{name: "empty", old: "", new: leaky, is: ErrNoResults, want: []string{"no benchmark results in old", "BenchmarkParse-8"}},
		{name: "not benchmarks", old: leaky, new: "hello\nworld: 1\nPASS\n", is: ErrNoResults, want: []string{"in new"}},
		{name: "binary", old: "\x1f\x8b\x08\x00garbage", new: leaky, is: ErrNoResults},
		{name: "only bad lines", old: "BenchmarkX 100\nBenchmarkY x 1 ns/op\n", new: leaky, is: ErrNoResults,
			want: []string{"first bad line", "old:1: missing measurements"}},
		{name: "mismatched names", old: leaky, new: strings.ReplaceAll(leaky, "Worker_Process", "Other"), is: ErrNoCommon,
			want: []string{"old has Worker_Process-2", "new has Other-2"}},
		{name: "mismatched packages", old: leaky, new: string(readBench(t, "optimizedcache.txt")), is: ErrNoCommon,
			want: []string{"differ in pkg", "--ignore pkg"}},
		{name: "bad ignore", old: leaky, new: leaky, opts: Options{Ignore: "(("}, want: []string{`ignore "(("`}},
		{name: "alpha out of range", old: leaky, new: leaky, opts: Options{Alpha: 1.5}, want: []string{"Alpha 1.5"}},
		{name: "gate unit without values", old: leaky, new: leaky, opts: Options{Gates: mustGates(t, "MB/s<-5%")},
			want: []string{"no benchmark reports B/s", "sec/op, B/op, allocs/op"}},
		{name: "gate name matches nothing", old: leaky, new: leaky, opts: Options{Gates: mustGates(t, "Parse:B/op>+5%")},
			want: []string{`"Parse" matches no benchmark`}},
		{name: "line too long", old: "BenchmarkX " + strings.Repeat("1", 70000) + " 1 ns/op\n", new: leaky,
			want: []string{"read old", "token too long"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := Compare(named("old", c.old), named("new", c.new), c.opts)
			if err == nil {
				t.Fatalf("Compare succeeded with %d tables, want an error", len(rep.Tables))
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v, want one wrapping %v", err, c.is)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestCompare_warnings(t *testing.T) {
	old := crafted("p", "A", series{"B/op", repeat(10, 10)}) + "BenchmarkGone-2\t10\t5 B/op\nBenchmarkBroken-2 10 5\n"
	new := crafted("p", "A", series{"B/op", repeat(10, 10)}) + "BenchmarkAdded-2\t10\t5 B/op\n"
	rep := mustCompare(t, named("old", old), named("new", new), Options{})
	all := strings.Join(strs(rep.Warnings), "\n")
	for _, w := range []string{"old:15: missing units", "only in old, not compared: Gone-2", "only in new, not compared: Added-2"} {
		if !strings.Contains(all, w) {
			t.Errorf("warnings %q lack %q", all, w)
		}
	}
}

func TestCompare_sameLabel(t *testing.T) {
	rep := mustCompare(t, benchInput(t, "leakycache.txt"), benchInput(t, "leakycache.txt"), Options{})
	if rep.Old != "leakycache.txt#0" || rep.New != "leakycache.txt#1" {
		t.Errorf("labels %q and %q, want #0 and #1 suffixes", rep.Old, rep.New)
	}
	for _, tab := range rep.Tables {
		for _, r := range tab.Rows {
			if r.Delta == nil || r.Delta.Significant || r.Delta.Text != "~" {
				t.Errorf("%s %s: delta %+v, want ~ for a file against itself", tab.Unit, r.Name, r.Delta)
			}
		}
	}
}

func TestCompare_tooFewRuns(t *testing.T) {
	old := crafted("p", "A", series{"B/op", repeat(10, 5)})
	new := crafted("p", "A", series{"B/op", repeat(20, 5)})
	for _, strict := range []bool{false, true} {
		rep := mustCompare(t, named("old", old), named("new", new), Options{Strict: strict})
		problems := rep.Warnings
		if strict {
			problems = rep.Errors
			if len(rep.Warnings) != 0 {
				t.Errorf("strict: warnings %v, want the problem as an error", rep.Warnings)
			}
		} else if len(rep.Errors) != 0 {
			t.Errorf("not strict: errors %v, want none", rep.Errors)
		}
		if len(problems) != 1 || !strings.Contains(problems[0].Error(), "A-2 (5+5)") || !strings.Contains(problems[0].Error(), "-count 10") {
			t.Errorf("strict %v: problems %v, want one naming A-2 (5+5) and -count 10", strict, problems)
		}
	}
	// MinRuns lowers the bar.
	rep := mustCompare(t, named("old", old), named("new", new), Options{Strict: true, MinRuns: 5})
	if len(rep.Errors)+len(rep.Warnings) != 0 {
		t.Errorf("MinRuns 5: errors %v, warnings %v; want none", rep.Errors, rep.Warnings)
	}
}

func TestCompare_exactUnit(t *testing.T) {
	// A unit declared exact is compared without a test: any change counts.
	old := "Unit widgets assume=exact\n" + crafted("p", "A", series{"widgets", repeat(3, 3)})
	new := "Unit widgets assume=exact\n" + crafted("p", "A", series{"widgets", repeat(4, 3)})
	rep := mustCompare(t, named("old", old), named("new", new), Options{MinRuns: 3, Gates: mustGates(t, "widgets>+0%")})
	r := rep.Tables[0].Rows[0]
	if rep.Tables[0].Summary != "exact" || !r.Delta.Significant || r.Delta.P != 0 {
		t.Errorf("summary %s, delta %+v; want exact and significant", rep.Tables[0].Summary, r.Delta)
	}
	if len(rep.Decisions) != 1 || rep.Decisions[0].Outcome != gate.Fail {
		t.Errorf("decisions %+v, want one failure", rep.Decisions)
	}
}

func BenchmarkCompare(b *testing.B) {
	old, new := readBench(b, "services-a.txt"), readBench(b, "services-b.txt")
	gates := mustGates(b, "B/op>+5%", "sec/op>+10%")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compare(Input{Label: "a", R: bytes.NewReader(old)}, Input{Label: "b", R: bytes.NewReader(new)}, Options{Gates: gates}); err != nil {
			b.Fatal(err)
		}
	}
}
