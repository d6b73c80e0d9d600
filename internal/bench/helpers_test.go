package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/gate"
)

// readBench returns a benchmark file under testdata/bench.
func readBench(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "bench", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// benchInput is a file under testdata/bench as an Input labelled with its
// name.
func benchInput(t testing.TB, name string) Input {
	t.Helper()
	return Input{Label: name, R: bytes.NewReader(readBench(t, name))}
}

// series is the values of one unit, one per run.
type series struct {
	unit   string
	values []float64
}

// crafted writes benchmark output for gate-decision edge cases: one
// benchmark line per run with every series' value, in a file with a pkg
// configuration. The series must have the same length.
func crafted(pkg, name string, ss ...series) string {
	var b strings.Builder
	fmt.Fprintf(&b, "goos: linux\ngoarch: amd64\npkg: %s\n", pkg)
	for i := range ss[0].values {
		fmt.Fprintf(&b, "Benchmark%s-2\t1000", name)
		for _, s := range ss {
			fmt.Fprintf(&b, "\t%v %s", s.values[i], s.unit)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// repeat returns n copies of v.
func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// spread returns n values around v, from v·(1−rel) to v·(1+rel).
func spread(v, rel float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		f := -rel
		if n > 1 {
			f = -rel + 2*rel*float64(i)/float64(n-1)
		}
		out[i] = v * (1 + f)
	}
	return out
}

func mustCompare(t *testing.T, old, new Input, o Options) *Report {
	t.Helper()
	rep, err := Compare(old, new, o)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	return rep
}

func mustGates(t testing.TB, exprs ...string) []gate.Gate {
	t.Helper()
	var gates []gate.Gate
	for _, e := range exprs {
		g, err := ParseGate(e)
		if err != nil {
			t.Fatalf("ParseGate(%q): %v", e, err)
		}
		gates = append(gates, g)
	}
	return gates
}

// named is an Input of a string.
func named(label, s string) Input { return Input{Label: label, R: strings.NewReader(s)} }
