package report

import (
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"

	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/report/chart"
)

// gctraceRows is how many cycles the text report lists; longer logs are
// sampled evenly, first and last included.
const gctraceRows = 24

// GCTrace is the summary of a gctrace log (heapscope gctrace): text or
// JSON, and the heap over time with a mark per GC cycle as SVG, or as an
// HTML page with the text under the chart.
type GCTrace struct {
	Summary *gcstats.TraceSummary
}

// Formats lists GCTrace's formats.
func (GCTrace) Formats() []Format {
	return []Format{FormatText, FormatJSON, FormatSVG, FormatHTML}
}

func (g GCTrace) data() any { return g.Summary }

func (g GCTrace) render(w io.Writer, f Format) error {
	switch f {
	case FormatSVG:
		return gctraceChart(g.Summary).WriteSVG(w)
	case FormatHTML:
		return chartPage(w, gctraceChart(g.Summary), gctraceText(g.Summary))
	}
	_, err := io.WriteString(w, gctraceText(g.Summary))
	return err
}

func gctraceText(s *gcstats.TraceSummary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d GC cycles from %s to %s after process start", s.Cycles, humanize.Seconds(s.FirstAtSeconds), humanize.Seconds(s.LastAtSeconds))
	if s.CyclesPerSecond > 0 {
		fmt.Fprintf(&b, ", %s", humanize.Rate(s.CyclesPerSecond))
	}
	b.WriteString("\n")
	var kinds []string
	if s.Forced > 0 {
		kinds = append(kinds, fmt.Sprintf("%d forced (runtime.GC, debug.FreeOSMemory)", s.Forced))
	}
	if s.Periodic > 0 {
		kinds = append(kinds, fmt.Sprintf("%d periodic (no GC for 2 minutes)", s.Periodic))
	}
	if s.LeakChecks > 0 {
		kinds = append(kinds, fmt.Sprintf("%d checking for goroutine leaks", s.LeakChecks))
	}
	if len(kinds) > 0 {
		fmt.Fprintf(&b, "  of which %s\n", strings.Join(kinds, ", "))
	}
	pct := func(p gcstats.Percentiles) string {
		return fmt.Sprintf("p50 %s, p90 %s, p99 %s, max %s", humanize.Seconds(p.P50), humanize.Seconds(p.P90), humanize.Seconds(p.P99), humanize.Seconds(p.Max))
	}
	fmt.Fprintf(&b, "STW pauses (wall, sweep + mark termination): %s; total %s\n", pct(s.PauseSeconds), humanize.Seconds(s.PauseTotalSeconds))
	fmt.Fprintf(&b, "concurrent mark (wall): %s\n", pct(s.MarkSeconds))
	fmt.Fprintf(&b, "GC CPU per cycle: %s; total %s (STW %s, assist %s, background %s, idle %s)\n", pct(s.CPUSeconds),
		humanize.Seconds(s.CPUTotalSeconds), humanize.Seconds(s.STWCPUTotalSeconds), humanize.Seconds(s.AssistCPUTotalSeconds),
		humanize.Seconds(s.BackgroundCPUTotalSeconds), humanize.Seconds(s.IdleCPUTotalSeconds))
	fmt.Fprintf(&b, "GC CPU share since process start (the runtime's N%%): %s at the last cycle, %s at most\n",
		humanize.Percent(s.GCCPUShare), humanize.Percent(s.GCCPUSharePeak))
	fmt.Fprintf(&b, "heap: peak %s at a cycle's start, live peak %s, goal peak %s; last cycle live %s, goal %s; GOMAXPROCS %d\n",
		humanize.Bytes(float64(s.HeapStartPeakBytes)), humanize.Bytes(float64(s.HeapLivePeakBytes)), humanize.Bytes(float64(s.HeapGoalPeakBytes)),
		humanize.Bytes(float64(s.HeapLiveLastBytes)), humanize.Bytes(float64(s.HeapGoalLastBytes)), s.Procs)
	if sc := s.Scavenger; sc != nil {
		fmt.Fprintf(&b, "scavenger: %d lines, returned %s in the background and %s eagerly (%d forced); %s released at the last line\n",
			sc.Lines, humanize.Bytes(float64(sc.BackgroundBytes)), humanize.Bytes(float64(sc.EagerBytes)), sc.Forced, humanize.Bytes(float64(sc.ReleasedLastBytes)))
	}

	b.WriteString("\n")
	tw := plainTable()
	tw.AppendHeader(table.Row{"gc", "at", "heap start", "end", "live", "goal", "pause", "mark", "cpu", "share", ""})
	rightAlign(tw, 1, 10)
	rows := sampleCycles(len(s.Series), gctraceRows)
	for _, i := range rows {
		c := &s.Series[i]
		var note []string
		if c.Forced {
			note = append(note, "forced")
		}
		if c.Periodic {
			note = append(note, "periodic")
		}
		if c.LeakCheck {
			note = append(note, "leak check")
		}
		tw.AppendRow(table.Row{
			c.N, humanize.Seconds(c.AtSeconds),
			humanize.Bytes(float64(c.HeapStartBytes)), humanize.Bytes(float64(c.HeapEndBytes)), humanize.Bytes(float64(c.HeapLiveBytes)), humanize.Bytes(float64(c.HeapGoalBytes)),
			humanize.Seconds(c.PauseSeconds()), humanize.Seconds(c.MarkSeconds), humanize.Seconds(c.CPUSeconds()), humanize.Percent(c.GCCPUShare),
			strings.Join(note, ", "),
		})
	}
	if len(rows) < len(s.Series) {
		fmt.Fprintf(&b, "%d of %d cycles, evenly spread (all of them with --format json):\n", len(rows), len(s.Series))
	}
	b.WriteString(indent(tw.Render(), "  "))
	writeWarnings(&b, s.Warnings)
	return b.String()
}

// sampleCycles returns up to n indexes out of count, evenly spread, the
// first and last included.
func sampleCycles(count, n int) []int {
	if count <= n {
		idx := make([]int, count)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i * (count - 1) / (n - 1)
	}
	return idx
}

// gctraceChart draws the heap of a gctrace log over time: its size as a
// cycle starts and ends and what it marked live, the goal, and a mark per
// cycle.
func gctraceChart(s *gcstats.TraceSummary) *chart.Chart {
	heap := chart.Series{Name: "heap", Color: "#1f77b4"}
	live := chart.Series{Name: "live after GC", Color: "#2ca02c", Dashed: true}
	goal := chart.Series{Name: "goal", Color: "#ff7f0e", Style: chart.Step}
	var marks []chart.Mark
	for i := range s.Series {
		c := &s.Series[i]
		end := c.AtSeconds + c.SweepTermSeconds + c.MarkSeconds + c.MarkTermSeconds
		// The heap grows to HeapStart, keeps growing while marking, then
		// falls to what was marked live plus what was allocated since.
		heap.Points = append(heap.Points,
			chart.Point{X: c.AtSeconds, Y: float64(c.HeapStartBytes)},
			chart.Point{X: end, Y: float64(c.HeapEndBytes)},
			chart.Point{X: end, Y: float64(c.HeapLiveBytes)})
		live.Points = append(live.Points, chart.Point{X: end, Y: float64(c.HeapLiveBytes)})
		goal.Points = append(goal.Points, chart.Point{X: c.AtSeconds, Y: float64(c.HeapGoalBytes)})
		color, kind := "#555", "GC"
		switch {
		case c.Periodic:
			color, kind = "#9467bd", "periodic GC"
		case c.Forced:
			color, kind = "#d62728", "forced GC"
		}
		tip := fmt.Sprintf("%s %d at %s: %s → %s → %s, goal %s, pause %s", kind, c.N, humanize.Seconds(c.AtSeconds),
			humanize.Bytes(float64(c.HeapStartBytes)), humanize.Bytes(float64(c.HeapEndBytes)), humanize.Bytes(float64(c.HeapLiveBytes)),
			humanize.Bytes(float64(c.HeapGoalBytes)), humanize.Seconds(c.PauseSeconds()))
		marks = append(marks, chart.Mark{X: c.AtSeconds, Color: color, Tip: tip})
	}
	return &chart.Chart{
		Title:  fmt.Sprintf("Go heap over time: %d GC cycles", s.Cycles),
		X:      chart.Axis{Label: "seconds since process start", Format: humanize.Seconds, Tight: true},
		Y:      chart.Axis{Label: "heap", Format: humanize.Bytes, Bytes: true},
		Series: []chart.Series{heap, live, goal},
		Marks:  marks,
		Keys:   []chart.Key{{Name: "GC", Color: "#555"}, {Name: "forced GC", Color: "#d62728"}, {Name: "periodic GC", Color: "#9467bd"}},
	}
}

// chartPage writes a page of its own holding a chart and, under it, a
// text summary.
func chartPage(w io.Writer, c *chart.Chart, summary string) error {
	title := c.Title
	if title == "" {
		title = c.Label
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>\n", html.EscapeString(title))
	b.WriteString("<style>body{font-family:sans-serif;margin:1em}pre{font-size:12px}svg.chart{display:block;max-width:100%;height:auto}</style></head><body>\n")
	if err := c.WriteSVG(&b); err != nil {
		return err
	}
	fmt.Fprintf(&b, "<pre>%s</pre>\n</body></html>\n", html.EscapeString(summary))
	_, err := io.WriteString(w, b.String())
	return err
}
