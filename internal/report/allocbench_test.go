package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/heapscope/heapscope/internal/allocbench"
	"github.com/heapscope/heapscope/internal/goldenfile"
)

// allocbenchSaved is the report of golang/go#72991's samples as
// allocbench --format json prints it (allocbench's golden file).
const allocbenchSaved = "../allocbench/testdata/golden/regression.json"

// allocbenchReport analyses the saved report again, as allocbench --from
// does.
func allocbenchReport(t testing.TB) *allocbench.Report {
	t.Helper()
	f, err := os.Open(allocbenchSaved)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := allocbench.ReadSaved(f)
	if err != nil {
		t.Fatal(err)
	}
	r, err := allocbench.Analyse(s.Runs, s.Patterns, s.Toolchains, s.LiveBytes, allocbench.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAllocbench_golden(t *testing.T) {
	r := allocbenchReport(t)
	for _, f := range []struct {
		ext    string
		format Format
	}{{"txt", FormatText}, {"md", FormatMarkdown}, {"svg", FormatSVG}, {"html", FormatHTML}} {
		t.Run(f.ext, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, f.format, Allocbench{Report: r}); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, filepath.Join("testdata", "allocbench", "regression."+f.ext), b.Bytes())
		})
	}
}

// TestAllocbench_JSON checks that the JSON reads back to itself: it is
// what allocbench --from takes.
func TestAllocbench_JSON(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, FormatJSON, Allocbench{Report: allocbenchReport(t)}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(allocbenchSaved)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("JSON differs from the saved report it was analysed from:\n%s", b.Bytes())
	}
}
