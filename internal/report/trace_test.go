package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/exectrace"
	"github.com/heapscope/heapscope/internal/goldenfile"
)

// allocTimeline reads the execution trace exectrace's tests record.
func allocTimeline(t testing.TB) *exectrace.Timeline {
	t.Helper()
	data, err := os.ReadFile("../exectrace/testdata/alloc.trace")
	if err != nil {
		t.Fatal(err)
	}
	tl, err := exectrace.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func TestTrace_golden(t *testing.T) {
	tl := allocTimeline(t)
	for _, f := range []struct {
		ext    string
		format Format
	}{{"txt", FormatText}, {"svg", FormatSVG}, {"html", FormatHTML}} {
		t.Run(f.ext, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, f.format, Trace{Timeline: tl, Title: "alloc.trace"}); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, filepath.Join("testdata", "trace", "alloc."+f.ext), b.Bytes())
		})
	}
}

// TestTrace_JSON checks that the JSON is the timeline as result.json
// carries it, as exectrace's golden file holds it.
func TestTrace_JSON(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, FormatJSON, Trace{Timeline: allocTimeline(t), Title: "alloc.trace"}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../exectrace/testdata/golden/alloc.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("JSON differs from exectrace's golden file:\n%.400s", b.Bytes())
	}
}

// TestTrace_chart checks the chart's parts against the timeline: a band
// per GC cycle, a mark per pause.
func TestTrace_chart(t *testing.T) {
	tl := allocTimeline(t)
	var b bytes.Buffer
	if err := Write(&b, FormatSVG, Trace{Timeline: tl, Title: "alloc.trace"}); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if n := strings.Count(svg, "<title>GC "); n != len(tl.Cycles) {
		t.Errorf("%d GC cycles drawn, want %d", n, len(tl.Cycles))
	}
	if n := strings.Count(svg, "<title>stop-the-world ("); n != len(tl.Pauses) {
		t.Errorf("%d pauses drawn, want %d", n, len(tl.Pauses))
	}
}
