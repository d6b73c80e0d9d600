package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/jedib0t/go-pretty/v6/text"

	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/linechart"
)

// gctraceRows is how many cycles the text report lists; longer logs are
// sampled evenly, first and last included.
const gctraceRows = 24

// GCTrace writes the summary of a gctrace log (heapscope gctrace) in the
// format: text or JSON.
func GCTrace(w io.Writer, s *gcstats.TraceSummary, f Format) error {
	if f == FormatJSON {
		return writeJSON(w, s)
	}
	_, err := io.WriteString(w, gctraceText(s))
	return err
}

func gctraceText(s *gcstats.TraceSummary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d GC cycles from %s to %s after process start", s.Cycles, humanize.Seconds(s.FirstAtSeconds), humanize.Seconds(s.LastAtSeconds))
	if s.CyclesPerSecond > 0 {
		fmt.Fprintf(&b, ", %.3g per second", s.CyclesPerSecond)
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
	tw := table.NewWriter()
	style := table.StyleDefault
	style.Options = table.OptionsNoBordersAndSeparators
	style.Format.Header = text.FormatDefault
	tw.SetStyle(style)
	tw.AppendHeader(table.Row{"gc", "at", "heap start", "end", "live", "goal", "pause", "mark", "cpu", "share", ""})
	var cols []table.ColumnConfig
	for n := 1; n <= 10; n++ {
		cols = append(cols, table.ColumnConfig{Number: n, Align: text.AlignRight, AlignHeader: text.AlignRight})
	}
	tw.SetColumnConfigs(cols)
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
	for _, wmsg := range s.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", wmsg)
	}
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

// GCTracePlot writes the heap over time with GC marks: SVG, or an HTML
// page with the SVG and the text summary when html is set.
func GCTracePlot(w io.Writer, s *gcstats.TraceSummary, html bool) error {
	const mib = 1 << 20
	var heap, live, goal []linechart.Point
	var marks []linechart.Mark
	for i := range s.Series {
		c := &s.Series[i]
		end := c.AtSeconds + c.SweepTermSeconds + c.MarkSeconds + c.MarkTermSeconds
		// The heap grows to HeapStart, keeps growing while marking, then
		// falls to what was marked live plus what was allocated since.
		heap = append(heap,
			linechart.Point{X: c.AtSeconds, Y: float64(c.HeapStartBytes) / mib},
			linechart.Point{X: end, Y: float64(c.HeapEndBytes) / mib},
			linechart.Point{X: end, Y: float64(c.HeapLiveBytes) / mib})
		live = append(live, linechart.Point{X: end, Y: float64(c.HeapLiveBytes) / mib})
		goal = append(goal, linechart.Point{X: c.AtSeconds, Y: float64(c.HeapGoalBytes) / mib})
		color, kind := "#555", "GC"
		switch {
		case c.Periodic:
			color, kind = "#9467bd", "periodic GC"
		case c.Forced:
			color, kind = "#d62728", "forced GC"
		}
		title := fmt.Sprintf("%s %d at %s: %s → %s → %s, goal %s, pause %s", kind, c.N, humanize.Seconds(c.AtSeconds),
			humanize.Bytes(float64(c.HeapStartBytes)), humanize.Bytes(float64(c.HeapEndBytes)), humanize.Bytes(float64(c.HeapLiveBytes)),
			humanize.Bytes(float64(c.HeapGoalBytes)), humanize.Seconds(c.PauseSeconds()))
		marks = append(marks, linechart.Mark{X: c.AtSeconds, Color: color, Title: title})
	}
	ch := linechart.Chart{
		Title:   fmt.Sprintf("Go heap over time: %d GC cycles", s.Cycles),
		XLabel:  "seconds since process start",
		YLabel:  "heap (MiB)",
		XFormat: func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) + "s" },
		YFormat: func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) },
		Series: []linechart.Series{
			{Name: "heap", Color: "#1f77b4", Points: heap},
			{Name: "live after GC", Color: "#2ca02c", Points: live, Dashed: true},
			{Name: "goal", Color: "#ff7f0e", Points: goal, Step: true},
		},
		Marks: marks,
		MarkLegend: []linechart.Series{
			{Name: "GC", Color: "#555"}, {Name: "forced GC", Color: "#d62728"}, {Name: "periodic GC", Color: "#9467bd"},
		},
	}
	if html {
		return ch.HTML(w, gctraceText(s))
	}
	return ch.SVG(w)
}
