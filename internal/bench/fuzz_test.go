package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
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
// and renders whatever comes out in every format.
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
				var buf bytes.Buffer
				for _, w := range []func(*bytes.Buffer, *Report) error{
					func(b *bytes.Buffer, r *Report) error { return WriteText(b, r) },
					func(b *bytes.Buffer, r *Report) error { return WriteMarkdown(b, r) },
				} {
					if err := w(&buf, rep); err != nil {
						t.Fatal(err)
					}
				}
				buf.Reset()
				if err := WriteJSON(&buf, rep); err != nil {
					t.Fatalf("WriteJSON: %v", err)
				}
				if !json.Valid(buf.Bytes()) {
					t.Fatalf("WriteJSON wrote invalid JSON:\n%s", buf.Bytes())
				}
				buf.Reset()
				if err := WriteJUnit(&buf, rep); err != nil {
					t.Fatalf("WriteJUnit: %v", err)
				}
				var doc junitSuites
				if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
					t.Fatalf("WriteJUnit wrote XML that does not parse: %v\n%s", err, buf.Bytes())
				}
			}
		}
	})
}
