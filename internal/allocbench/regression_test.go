//go:build allocbench

// These tests fetch Go toolchains through the module proxy and run the
// lab for real, which takes a minute or two: they run with -tags
// allocbench (make test turns it on).

package allocbench

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestLab_findsRegression runs the reduced matrix: an affected Go 1.24
// release against the release that fixed golang/go#72991, on the
// pattern that must differ and its pointer-free twin, which must not.
func TestLab_findsRegression(t *testing.T) {
	mustDiffer := Pattern{Large: true, Pointers: true, Container: ContainerSlice, Sparse: true}
	mustNot := Pattern{Large: true, Container: ContainerSlice, Sparse: true}
	patterns := []Pattern{mustDiffer, mustNot}
	lab := &Lab{Dir: t.TempDir(), Live: 32 << 20}
	m, err := lab.RunMatrix(context.Background(), MatrixOptions{
		Toolchains: []string{"go1.24.3", "go1.25.0"},
		Patterns:   patterns,
		Count:      3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Failures) > 0 {
		t.Fatalf("%d runs failed; the first: %v", len(m.Failures), m.Failures[0])
	}
	// Three runs against three: the smallest p-value is 0.1.
	r, err := Analyse(m.Samples, patterns, m.Toolchains, lab.Live, Options{Alpha: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	differ, not := r.Patterns[0], r.Patterns[1]
	if len(differ.Flags) != 1 {
		t.Fatalf("%s not flagged: cells %+v", differ.Name, differ.Cells)
	}
	if f := differ.Flags[0]; f.A != "go1.24.3" || f.Ratio > 0.5 {
		t.Errorf("%s: go1.25.0 at %.2f× go1.24.3's RSS per heap byte, want well below half", differ.Name, f.Ratio)
	}
	if not.Flagged() {
		t.Errorf("%s flagged: %+v", not.Name, not.Flags)
	}
}

func TestLab_Prepare_unknownRelease(t *testing.T) {
	lab := &Lab{Dir: t.TempDir()}
	_, err := lab.Prepare(context.Background(), "go1.99.0")
	var te *ToolchainError
	if !errors.As(err, &te) {
		t.Fatalf("error %v, want a *ToolchainError", err)
	}
	if !strings.Contains(err.Error(), "go1.99.0") || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q should name the toolchain on one line", err)
	}
}
