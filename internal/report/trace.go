package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/exectrace"
	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/report/chart"
)

// Trace is the GC timeline of an execution trace (heapscope trace): the
// summary and a table of the cycles as text, the chart as SVG, both on
// an HTML page, or the timeline as result.json's trace section (JSON).
type Trace struct {
	Timeline *exectrace.Timeline
	// Title names the trace: a file's name, or the host it was captured
	// from.
	Title string
}

// Formats lists Trace's formats.
func (Trace) Formats() []Format {
	return []Format{FormatText, FormatJSON, FormatSVG, FormatHTML}
}

func (d Trace) data() any { return d.Timeline.Result(0) }

func (d Trace) render(w io.Writer, f Format) error {
	switch f {
	case FormatSVG:
		return traceChart(d.Timeline, "GC timeline of "+d.Title).WriteSVG(w)
	case FormatHTML:
		var text strings.Builder
		if err := traceText(&text, d.Timeline, d.Title); err != nil {
			return err
		}
		return chartPage(w, traceChart(d.Timeline, "GC timeline of "+d.Title), text.String())
	}
	return traceText(w, d.Timeline, d.Title)
}

// traceText writes the summary and a table of the cycles.
func traceText(w io.Writer, t *exectrace.Timeline, title string) error {
	var b strings.Builder
	s := t.Summarise()
	secs := func(d time.Duration) string { return humanize.Seconds(d.Seconds()) }
	bytes := func(v uint64) string { return humanize.Bytes(float64(v)) }
	fmt.Fprintf(&b, "GC timeline of %s: %s traced, %d events\n\n", title, secs(t.Duration), t.Events)
	fmt.Fprintf(&b, "GC cycles        %d (%d complete), %s\n", s.Cycles, s.CompleteCycles, humanize.Rate(s.CyclesPerSecond))
	fmt.Fprintf(&b, "time in GC       %s of wall time (a cycle under way)\n", humanize.Percent(s.GCShare))
	fmt.Fprintf(&b, "stopped (STW)    %s of wall time; GC pauses %s\n", humanize.Percent(s.STWShare), humanize.Percent(s.GCSTWShare))
	if s.Pauses > 0 {
		fmt.Fprintf(&b, "pauses           %d (%d GC), p50 %s, p99 %s, max %s\n", s.Pauses, s.GCPauses,
			humanize.Seconds(s.PauseP50Seconds), humanize.Seconds(s.PauseP99Seconds), humanize.Seconds(s.PauseMaxSeconds))
	} else {
		b.WriteString("pauses           none\n")
	}
	if s.CompleteCycles > 0 {
		fmt.Fprintf(&b, "mark phase       mean %s, max %s\n", humanize.Seconds(s.MarkMeanSeconds), humanize.Seconds(s.MarkMaxSeconds))
	}
	fmt.Fprintf(&b, "mark assists     %s in total\n", humanize.Seconds(s.MarkAssistSeconds))
	if len(t.Heap) > 0 {
		fmt.Fprintf(&b, "heap (HeapAlloc) %s to %s; last goal %s\n", bytes(s.HeapMinBytes), bytes(s.HeapMaxBytes), bytes(s.GoalLastBytes))
	}
	if len(t.Cycles) > 0 {
		b.WriteString("\n  #  start      length     mark       sweep-term  mark-term   heap before  heap after  goal\n")
		for i, c := range t.Cycles {
			mark := ""
			if c.Partial {
				mark = "  (partial)"
			}
			fmt.Fprintf(&b, "%3d  %-9s  %-9s  %-9s  %-10s  %-10s  %-11s  %-10s  %s%s\n", i+1,
				secs(c.Start), secs(c.Length()), secs(c.Mark()), secs(c.SweepTermination), secs(c.MarkTermination),
				bytes(c.HeapBefore), bytes(c.HeapAfter), bytes(c.Goal), mark)
		}
	}
	var other []string
	for _, p := range t.Pauses {
		if !p.GC {
			other = append(other, fmt.Sprintf("%s at %s (%s)", p.Reason, secs(p.Start), secs(p.Duration)))
		}
	}
	if len(other) > 0 {
		fmt.Fprintf(&b, "\nother stop-the-world pauses: %s\n", strings.Join(other, "; "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// traceSeriesPoints is how many points of the heap and goal series the
// chart draws: two per pixel of its width.
const traceSeriesPoints = 1800

// traceChart draws the timeline: HeapAlloc and the heap goal over time,
// each GC cycle as a shaded band, and the stop-the-world pauses as marks
// under the plot (red for the GC's, grey for others).
func traceChart(t *exectrace.Timeline, title string) *chart.Chart {
	s := t.Summarise()
	end := t.Duration.Seconds()
	secs := func(d time.Duration) string { return humanize.Seconds(d.Seconds()) }
	bytes := func(v uint64) string { return humanize.Bytes(float64(v)) }
	c := &chart.Chart{
		Title: title,
		Subtitle: fmt.Sprintf("%d GC cycles in %s; GC under way %s of the time, stopped %s; pause p99 %s, max %s",
			s.Cycles, secs(t.Duration), humanize.Percent(s.GCShare), humanize.Percent(s.STWShare),
			humanize.Seconds(s.PauseP99Seconds), humanize.Seconds(s.PauseMaxSeconds)),
		Width: 1000, Height: 440,
		X:          chart.Axis{Label: "seconds from the trace's start", Format: humanize.Seconds, Max: end},
		Y:          chart.Axis{Format: humanize.Bytes, Bytes: true},
		MarksLabel: "STW",
		Keys: []chart.Key{
			{Name: "GC cycle", Color: "#f2c14e", Faint: true}, {Name: "GC pause", Color: "#e15759"}, {Name: "other pause", Color: "#999"},
		},
	}
	for i, cy := range t.Cycles {
		c.Bands = append(c.Bands, chart.Band{From: cy.Start.Seconds(), To: cy.End.Seconds(), Color: "#f2c14e",
			Tip: fmt.Sprintf("GC %d at %s: %s long, mark %s, heap %s → %s, goal %s",
				i+1, secs(cy.Start), secs(cy.Length()), secs(cy.Mark()), bytes(cy.HeapBefore), bytes(cy.HeapAfter), bytes(cy.Goal))})
	}
	// Steps: a value holds until the next, the last until the trace's end.
	series := func(ps []exectrace.Point, name, colour string, dashed bool) {
		if len(ps) == 0 {
			return
		}
		s := chart.Series{Name: name, Color: colour, Style: chart.Step, Dashed: dashed}
		for _, p := range exectrace.Downsample(ps, traceSeriesPoints) {
			s.Points = append(s.Points, chart.Point{X: p.T.Seconds(), Y: float64(p.Value)})
		}
		s.Points = append(s.Points, chart.Point{X: end, Y: s.Points[len(s.Points)-1].Y})
		c.Series = append(c.Series, s)
	}
	series(t.Goal, "heap goal", "#59a14f", true)
	series(t.Heap, "heap (HeapAlloc)", "#4e79a7", false)
	for _, p := range t.Pauses {
		colour := "#999"
		if p.GC {
			colour = "#e15759"
		}
		c.Marks = append(c.Marks, chart.Mark{X: p.Start.Seconds(), Width: p.Duration.Seconds(), Color: colour,
			Tip: fmt.Sprintf("stop-the-world (%s) at %s: %s", p.Reason, secs(p.Start), secs(p.Duration))})
	}
	return c
}
