package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/goldenfile"
)

// gctraceLogs are the gctrace logs gcstats' tests record, one per
// toolchain.
const gctraceLogs = "../gcstats/testdata/gctrace"

func gctraceSummary(t testing.TB, log string) *gcstats.TraceSummary {
	t.Helper()
	f, err := os.Open(filepath.Join(gctraceLogs, log))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := gcstats.ParseTrace(f)
	if err != nil {
		t.Fatal(err)
	}
	s := gcstats.Summarize(tr)
	return &s
}

// TestGCTrace_golden renders the summary of each toolchain's recorded
// log, and the plot of the newest.
func TestGCTrace_golden(t *testing.T) {
	logs, err := filepath.Glob(filepath.Join(gctraceLogs, "go1.*.txt"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no recorded logs: %v", err)
	}
	for _, log := range logs {
		t.Run(filepath.Base(log), func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, FormatText, GCTrace{Summary: gctraceSummary(t, filepath.Base(log))}); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, filepath.Join("testdata", "gctrace", filepath.Base(log)), b.Bytes())
		})
	}
	s := gctraceSummary(t, "go1.26.txt")
	for _, f := range []Format{FormatSVG, FormatHTML} {
		t.Run("go1.26-heap."+string(f), func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, f, GCTrace{Summary: s}); err != nil {
				t.Fatal(err)
			}
			got := b.String()
			goldenfile.Check(t, filepath.Join("testdata", "gctrace", "go1.26-heap."+string(f)), b.Bytes())
			// A mark per cycle, titled by its kind.
			if n := strings.Count(got, "<title>GC ") + strings.Count(got, "<title>forced GC ") + strings.Count(got, "<title>periodic GC "); n != s.Cycles {
				t.Errorf("%d GC marks, want %d", n, s.Cycles)
			}
			if strings.Contains(strings.ReplaceAll(got, `xmlns="http://www.w3.org/2000/svg"`, ""), "http") {
				t.Error("the plot makes an external reference")
			}
		})
	}
}
