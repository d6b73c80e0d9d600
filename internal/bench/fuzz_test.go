package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

func FuzzParseGate(f *testing.F) {
	for _, s := range []string{
		"B/op>+5%", "Process.*:allocs/op>+0%", "sec/op>+10%", "ns/op>50", "MB/s<-5%",
		"(?P<x>a):B/op>1", "B/op>=5%", "a:b:c<1e3%", ":>", "B/op>+5%%", "µs/op>1", "B/op>-0%",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		g, err := ParseGate(expr)
		if err != nil {
			return
		}
		if g.Unit == "" || math.IsNaN(g.Threshold) || math.IsInf(g.Threshold, 0) {
			t.Fatalf("ParseGate(%q) = %+v: empty unit or non-finite threshold", expr, g)
		}
		again, err := ParseGate(g.String())
		if err != nil {
			t.Fatalf("ParseGate(%q) accepted, its String %q is not: %v", expr, g.String(), err)
		}
		if again.Unit != g.Unit || again.Higher != g.Higher || again.Relative != g.Relative || again.Threshold != g.Threshold {
			t.Fatalf("ParseGate(%q) = %+v, parsing its String gives %+v", expr, g, again)
		}
	})
}

// FuzzCompare feeds arbitrary bytes to the reading path, as either side,
// and encodes whatever comes out as JSON (report's FuzzBench renders it
// in every format).
func FuzzCompare(f *testing.F) {
	f.Add(readBench(f, "leakycache.txt"))
	f.Add(readBench(f, "services-a.txt")[:2000])
	f.Add([]byte("Unit x/op assume=exact better=higher\nBenchmarkA-2 10 1 x/op 5 ns/op\nBenchmarkA/k=v 10 NaN ns/op\n"))
	f.Add([]byte("pkg: p\nBenchmarkA 1 1 ns/op\npkg:\nBenchmarkA 1 2 ns/op\nBenchmarkA-2 1 -3 ns/op\n"))
	f.Add([]byte("BenchmarkX\t0\t0 B/op\nBenchmarkX\t1\t+Inf B/op\n"))
	gates := mustGates(f, "B/op>+5%", "sec/op>10", "x/op<-1%")
	leaky := readBench(f, "leakycache.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, pair := range [][2][]byte{{data, data}, {data, leaky}} {
			for _, o := range []Options{{}, {Gates: gates, Strict: true, Ignore: "pkg"}} {
				rep, err := Compare(Input{Label: "a", R: bytes.NewReader(pair[0])}, Input{Label: "b", R: bytes.NewReader(pair[1])}, o)
				if err != nil {
					continue
				}
				data, err := json.Marshal(rep)
				if err != nil {
					t.Fatalf("encode the report as JSON: %v", err)
				}
				if !json.Valid(data) {
					t.Fatalf("invalid JSON:\n%s", data)
				}
			}
		}
	})
}
