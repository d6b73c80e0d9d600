package browsertests

import (
	"bytes"
	"os"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heapscope/heapscope/internal/exectrace"
	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/report"
)

// chartBox is what the test asks of a chart page.
type chartBox struct {
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	// Outside counts the chart's texts that stick out of it.
	Outside int `json:"outside"`
	// Overlaps counts the pairs of tick labels of one axis that overlap.
	Overlaps int `json:"overlaps"`
	Ticks    int `json:"ticks"`
	Marks    int `json:"marks"`
	Summary  int `json:"summary"`
}

// TestChartPages opens the pages of gctrace --plot and trace -o, both
// drawn by report/chart: the chart is visible, every text of it lies
// inside it, no two tick labels overlap, its marks are drawn and the
// summary is under it.
func TestChartPages(t *testing.T) {
	pages := map[string]func(*bytes.Buffer) error{
		"gctrace.html": func(b *bytes.Buffer) error {
			f, err := os.Open("../internal/gcstats/testdata/gctrace/go1.26.txt")
			if err != nil {
				return err
			}
			defer f.Close()
			tr, err := gcstats.ParseTrace(f)
			if err != nil {
				return err
			}
			s := gcstats.Summarize(tr)
			return report.Write(b, report.FormatHTML, report.GCTrace{Summary: &s})
		},
		"trace.html": func(b *bytes.Buffer) error {
			data, err := os.ReadFile("../internal/exectrace/testdata/alloc.trace")
			if err != nil {
				return err
			}
			tl, err := exectrace.Read(bytes.NewReader(data))
			if err != nil {
				return err
			}
			return report.Write(b, report.FormatHTML, report.Trace{Timeline: tl, Title: "alloc.trace"})
		},
	}
	ctx := newBrowser(t)
	for name, write := range pages {
		t.Run(name, func(t *testing.T) {
			w := watch(t, ctx)
			do(t, ctx, chromedp.Navigate(fileURL(t, writeFile(t, name, write))), chromedp.WaitVisible(chromedp.CSS(`svg.chart`)))
			got := run(t, ctx, chromedp.Evaluate[chartBox](`(() => {
				const svg = document.querySelector("svg.chart");
				const box = svg.getBoundingClientRect();
				const inside = r => r.left >= box.left - 1 && r.right <= box.right + 1 && r.top >= box.top - 1 && r.bottom <= box.bottom + 1;
				let outside = 0;
				for (const t of svg.querySelectorAll("text")) {
					if (!inside(t.getBoundingClientRect())) outside++;
				}
				const ticks = [...svg.querySelectorAll("text.tick")].map(t => t.getBoundingClientRect());
				let overlaps = 0;
				for (let i = 0; i < ticks.length; i++) {
					for (let j = i + 1; j < ticks.length; j++) {
						const a = ticks[i], b = ticks[j];
						if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) overlaps++;
					}
				}
				return {width: box.width, height: box.height, outside, overlaps, ticks: ticks.length,
					marks: svg.querySelectorAll("rect.mark").length, summary: document.querySelector("pre").textContent.length};
			})()`))
			if got.Width < 600 || got.Height < 250 {
				t.Errorf("chart is %.0f×%.0f, want it visible", got.Width, got.Height)
			}
			if got.Outside > 0 {
				t.Errorf("%d texts stick out of the chart", got.Outside)
			}
			if got.Ticks < 6 || got.Overlaps > 0 {
				t.Errorf("%d tick labels, %d overlapping pairs; want a readable axis each", got.Ticks, got.Overlaps)
			}
			if got.Marks == 0 || got.Summary == 0 {
				t.Errorf("%d marks and a summary of %d characters, want both", got.Marks, got.Summary)
			}
			screenshot(t, ctx, name+".png")
			w.check(t, "file://")
		})
	}
}
