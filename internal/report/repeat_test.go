package report

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/heapscope/heapscope/internal/goldenfile"
	"github.com/heapscope/heapscope/internal/result"
)

func repeatedRun() *result.Run {
	r := diagnosedRun()
	r.Status = result.StatusPartial
	r.Failures = []result.Failure{{Step: "window windows/002", Error: "fetch heap profile: 503 Service Unavailable"}}
	r.Repeat = &result.Repeat{
		Count: 3,
		Windows: []result.RepeatWindow{
			{Path: "windows/001", Status: result.StatusComplete},
			{Path: "windows/002", Status: result.StatusFailed, Error: "fetch heap profile: 503 Service Unavailable"},
			{Path: "windows/003", Status: result.StatusComplete},
		},
		Figures: map[string]result.FigureSummary{
			"heap_inuse_bytes":     {Median: 50 << 20, Min: 48 << 20, Max: 52 << 20, N: 2},
			"bytes_per_request":    {Median: 1210, Min: 1180, Max: 1240, N: 2},
			"gc_pause_p99_seconds": {Median: 180e-6, Min: 150e-6, Max: 210e-6, N: 2},
			"gc_cpu_fraction":      {Median: 0.021, Min: 0.02, Max: 0.022, N: 2},
		},
	}
	return r
}

func TestRepeat_golden(t *testing.T) {
	r := repeatedRun()
	var sum, md bytes.Buffer
	if err := Summary(&sum, r, "runs/svc"); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := HTML(&page, r, nil); err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, filepath.Join("testdata", "summary-repeated.txt"), sum.Bytes())
	goldenfile.Check(t, filepath.Join("testdata", "report-repeated.md"), md.Bytes())
	goldenfile.Check(t, filepath.Join("testdata", "report-repeated.html"), page.Bytes())
}
