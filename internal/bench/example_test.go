package bench_test

import (
	"fmt"
	"strings"

	"github.com/heapscope/heapscope/internal/bench"
	"github.com/heapscope/heapscope/internal/gate"
)

func ExampleParseGate() {
	for _, expr := range []string{"B/op>+5%", "Process.*:allocs/op>+0%", "ns/op>50", "MB/s<5%", "B/op>=5%"} {
		g, err := bench.ParseGate(expr)
		if err != nil {
			fmt.Println(strings.SplitN(err.Error(), ";", 2)[0])
			continue
		}
		fmt.Printf("%s: unit %s, higher %v, threshold %.3g, relative %v\n", g, g.Unit, g.Higher, g.Threshold, g.Relative)
	}
	// Output:
	// B/op>+5%: unit B/op, higher true, threshold 0.05, relative true
	// Process.*:allocs/op>+0%: unit allocs/op, higher true, threshold 0, relative true
	// ns/op>50: unit sec/op, higher true, threshold 5e-08, relative false
	// MB/s<5%: unit B/s, higher false, threshold -0.05, relative true
	// gate "B/op>=5%": a single > or < compares, not >= or <=
}

func ExampleCompare() {
	lines := func(bytesPerOp int) string {
		var b strings.Builder
		b.WriteString("pkg: example.com/cache\n")
		for range 10 {
			fmt.Fprintf(&b, "BenchmarkProcess-8\t100000\t%d B/op\t2 allocs/op\n", bytesPerOp)
		}
		return b.String()
	}
	g, _ := bench.ParseGate("B/op>+5%")
	rep, err := bench.Compare(
		bench.Input{Label: "old.txt", R: strings.NewReader(lines(160))},
		bench.Input{Label: "new.txt", R: strings.NewReader(lines(200))},
		bench.Options{Gates: []gate.Gate{g}},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range rep.Decisions {
		fmt.Println(d.Outcome, d.Benchmark, d.Reason)
	}
	// Output:
	// fail Process-8 B/op +25.00% is beyond +5% and significant (p=0.000 n=10)
}
