package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/bench"
	"github.com/heapscope/heapscope/internal/gate"
	"github.com/heapscope/heapscope/internal/goldenfile"
)

// benchData holds the go test -bench outputs of the example services
// that bench's own tests compare.
const benchData = "../bench/testdata/bench"

// benchCase is a comparison of two of them.
type benchCase struct {
	name     string
	old, new string
	ignore   string
	gates    []string
}

var goldenBench = []benchCase{
	// The fix, proved: the same benchmark in the leaky and the optimized
	// package.
	{"leaky-vs-optimized", "leakycache.txt", "optimizedcache.txt", "pkg", []string{"B/op>+5%", "Process:allocs/op>+0%", "sec/op>+10%"}},
	// The fix undone: the gates fail.
	{"optimized-vs-leaky", "optimizedcache.txt", "leakycache.txt", "pkg", []string{"B/op>+5%", "Process:allocs/op>+0%"}},
	// Two runs of the same code, two packages and two GOMAXPROCS:
	// several configurations, noise only.
	{"services", "services-a.txt", "services-b.txt", "", []string{"B/op>+5%", "Evicting:sec/op>+1%"}},
}

func benchReport(t testing.TB, c benchCase) *bench.Report {
	t.Helper()
	var gates []gate.Gate
	for _, expr := range c.gates {
		g, err := bench.ParseGate(expr)
		if err != nil {
			t.Fatal(err)
		}
		gates = append(gates, g)
	}
	input := func(name string) bench.Input {
		data, err := os.ReadFile(filepath.Join(benchData, name))
		if err != nil {
			t.Fatal(err)
		}
		return bench.Input{Label: name, R: bytes.NewReader(data)}
	}
	rep, err := bench.Compare(input(c.old), input(c.new), bench.Options{Ignore: c.ignore, Gates: gates})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestBench_golden(t *testing.T) {
	for _, c := range goldenBench {
		rep := benchReport(t, c)
		for _, f := range []struct {
			ext    string
			format Format
		}{{"text", FormatText}, {"md", FormatMarkdown}, {"junit.xml", FormatJUnit}} {
			t.Run(c.name+"."+f.ext, func(t *testing.T) {
				var b bytes.Buffer
				if err := Write(&b, f.format, Bench{Report: rep}); err != nil {
					t.Fatal(err)
				}
				goldenfile.Check(t, filepath.Join("testdata", "bench", c.name+"."+f.ext), b.Bytes())
			})
		}
	}
}

// TestBench_JSON checks that the JSON is the report's own, as bench's
// golden files hold it.
func TestBench_JSON(t *testing.T) {
	for _, c := range goldenBench {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, FormatJSON, Bench{Report: benchReport(t, c)}); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("../bench/testdata/golden", c.name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("JSON differs from bench's golden file:\n%s", b.Bytes())
			}
		})
	}
}

func TestBench_JUnitSkipsOneSided(t *testing.T) {
	old := "pkg: p\n" + strings.Repeat("BenchmarkA-2\t10\t10 B/op\n", 10) + "BenchmarkGone-2\t10\t5 B/op\n"
	new := "pkg: p\n" + strings.Repeat("BenchmarkA-2\t10\t10 B/op\n", 10) + "BenchmarkAdded-2\t10\t5 B/op\n"
	rep, err := bench.Compare(bench.Input{Label: "old", R: strings.NewReader(old)}, bench.Input{Label: "new", R: strings.NewReader(new)}, bench.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, FormatJUnit, Bench{Report: rep}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`skipped message="only in new"`, `skipped message="only in old"`, `skipped="2"`} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("JUnit lacks %s:\n%s", w, buf.String())
		}
	}
}

// FuzzBench compares arbitrary bytes, as either side, and renders
// whatever comes out in every format: the JUnit XML must parse.
func FuzzBench(f *testing.F) {
	leaky, err := os.ReadFile(filepath.Join(benchData, "leakycache.txt"))
	if err != nil {
		f.Fatal(err)
	}
	services, err := os.ReadFile(filepath.Join(benchData, "services-a.txt"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(leaky)
	f.Add(services[:2000])
	f.Add([]byte("Unit x/op assume=exact better=higher\nBenchmarkA-2 10 1 x/op 5 ns/op\nBenchmarkA/k=v 10 NaN ns/op\n"))
	f.Add([]byte("BenchmarkX\t0\t0 B/op\nBenchmarkX\t1\t+Inf B/op\n"))
	var gates []gate.Gate
	for _, expr := range []string{"B/op>+5%", "sec/op>10", "x/op<-1%"} {
		g, err := bench.ParseGate(expr)
		if err != nil {
			f.Fatal(err)
		}
		gates = append(gates, g)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, pair := range [][2][]byte{{data, data}, {data, leaky}} {
			for _, o := range []bench.Options{{}, {Gates: gates, Strict: true, Ignore: "pkg"}} {
				rep, err := bench.Compare(bench.Input{Label: "a", R: bytes.NewReader(pair[0])}, bench.Input{Label: "b", R: bytes.NewReader(pair[1])}, o)
				if err != nil {
					continue
				}
				for _, f := range (Bench{}).Formats() {
					var buf bytes.Buffer
					if err := Write(&buf, f, Bench{Report: rep}); err != nil {
						t.Fatalf("write %s: %v", f, err)
					}
					switch f {
					case FormatJSON:
						if !json.Valid(buf.Bytes()) {
							t.Fatalf("invalid JSON:\n%s", buf.Bytes())
						}
					case FormatJUnit:
						var doc junitSuites
						if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
							t.Fatalf("JUnit XML that does not parse: %v\n%s", err, buf.Bytes())
						}
					}
				}
			}
		}
	})
}

// TestBench_attributions renders where regressed benchmarks allocate:
// sizes and counts as humanize writes them, a failed attribution's
// reason, and one without a site above the noise.
func TestBench_attributions(t *testing.T) {
	rep := benchReport(t, goldenBench[1])
	config := rep.Tables[0].Config
	rep.Attributions = []bench.Attribution{
		{Benchmark: "Worker_Process-2", Config: config, Regressed: []string{"B/op +627.27%", "allocs/op +100.00%"}, Iters: 20000,
			Sites: []bench.SiteDelta{
				{Function: "example.com/leakycache.(*Worker).Process", File: "leakycache/leakycache.go", Line: 38, OldLine: 36, OldBytes: 0, NewBytes: 138, OldObjects: 0, NewObjects: 1},
				{Function: "strconv.Itoa", File: "/usr/lib/go/src/strconv/itoa.go", Line: 42, OldBytes: 24576, NewBytes: 16, OldObjects: 12000, NewObjects: 1},
			}},
		{Benchmark: "Worker_Process-2", Config: config, Err: "the profiled run failed: exit status 1"},
		{Benchmark: "Worker_Process-2", Config: config, Iters: 100},
	}
	for _, f := range []struct {
		ext    string
		format Format
	}{{"text", FormatText}, {"md", FormatMarkdown}} {
		t.Run(f.ext, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, f.format, Bench{Report: rep}); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, filepath.Join("testdata", "bench", "attribution."+f.ext), b.Bytes())
		})
	}
}
