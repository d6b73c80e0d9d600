package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/exectrace"
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
		return traceSVG(w, d.Timeline, "GC timeline of "+d.Title)
	case FormatHTML:
		return traceHTML(w, d.Timeline, "GC timeline of "+d.Title)
	}
	return traceText(w, d.Timeline, d.Title)
}

// traceText writes the summary and a table of the cycles.
func traceText(w io.Writer, t *exectrace.Timeline, title string) error {
	var b strings.Builder
	s := t.Summarise()
	fmt.Fprintf(&b, "GC timeline of %s: %s traced, %d events\n\n", title, traceDur(t.Duration), t.Events)
	fmt.Fprintf(&b, "GC cycles        %d (%d complete), %.1f/s\n", s.Cycles, s.CompleteCycles, s.CyclesPerSecond)
	fmt.Fprintf(&b, "time in GC       %s of wall time (a cycle under way)\n", tracePct(s.GCShare))
	fmt.Fprintf(&b, "stopped (STW)    %s of wall time; GC pauses %s\n", tracePct(s.STWShare), tracePct(s.GCSTWShare))
	if s.Pauses > 0 {
		fmt.Fprintf(&b, "pauses           %d (%d GC), p50 %s, p99 %s, max %s\n", s.Pauses, s.GCPauses,
			traceSecs(s.PauseP50Seconds), traceSecs(s.PauseP99Seconds), traceSecs(s.PauseMaxSeconds))
	} else {
		b.WriteString("pauses           none\n")
	}
	if s.CompleteCycles > 0 {
		fmt.Fprintf(&b, "mark phase       mean %s, max %s\n", traceSecs(s.MarkMeanSeconds), traceSecs(s.MarkMaxSeconds))
	}
	fmt.Fprintf(&b, "mark assists     %s in total\n", traceSecs(s.MarkAssistSeconds))
	if len(t.Heap) > 0 {
		fmt.Fprintf(&b, "heap (HeapAlloc) %s to %s; last goal %s\n", traceBytes(s.HeapMinBytes), traceBytes(s.HeapMaxBytes), traceBytes(s.GoalLastBytes))
	}
	if len(t.Cycles) > 0 {
		b.WriteString("\n  #  start      length     mark       sweep-term  mark-term   heap before  heap after  goal\n")
		for i, c := range t.Cycles {
			mark := ""
			if c.Partial {
				mark = "  (partial)"
			}
			fmt.Fprintf(&b, "%3d  %-9s  %-9s  %-9s  %-10s  %-10s  %-11s  %-10s  %s%s\n", i+1,
				traceDur(c.Start), traceDur(c.Length()), traceDur(c.Mark()), traceDur(c.SweepTermination), traceDur(c.MarkTermination),
				traceBytes(c.HeapBefore), traceBytes(c.HeapAfter), traceBytes(c.Goal), mark)
		}
	}
	other := map[string]int{}
	for _, p := range t.Pauses {
		if !p.GC {
			other[p.Reason]++
		}
	}
	if len(other) > 0 {
		b.WriteString("\nother stop-the-world pauses:")
		for _, p := range t.Pauses {
			if !p.GC {
				fmt.Fprintf(&b, " %s at %s (%s);", p.Reason, traceDur(p.Start), traceDur(p.Duration))
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, strings.TrimSuffix(b.String(), ";\n")+map[bool]string{true: "\n", false: ""}[strings.HasSuffix(b.String(), ";\n")])
	return err
}

func tracePct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func traceSecs(s float64) string { return traceDur(time.Duration(s * 1e9)) }

// dur prints a duration with three significant digits.
func traceDur(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.3gµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.3gms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.3gs", d.Seconds())
}

func traceBytes(v uint64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(v)/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(v)/(1<<10))
	}
	return fmt.Sprintf("%d B", v)
}

// Chart geometry.
const (
	traceW     = 1000
	traceH     = 420
	traceLeft  = 80
	traceRight = 20
	traceTop   = 40
	traceBot   = 70
)

// traceSVG draws the timeline: HeapAlloc and the heap goal over time,
// each GC cycle as a shaded band, and the stop-the-world pauses as marks
// under the plot (red for the GC's, grey for others).
func traceSVG(w io.Writer, t *exectrace.Timeline, title string) error {
	_, err := io.WriteString(w, svg(t, title))
	return err
}

func svg(t *exectrace.Timeline, title string) string {
	var b strings.Builder
	plotW := float64(traceW - traceLeft - traceRight)
	plotH := float64(traceH - traceTop - traceBot)
	total := t.Duration
	if total <= 0 {
		total = 1
	}
	var maxV uint64 = 1
	for _, p := range t.Heap {
		maxV = max(maxV, p.Value)
	}
	for _, p := range t.Goal {
		maxV = max(maxV, p.Value)
	}
	top := traceNiceCeil(float64(maxV))
	if maxV >= 1<<20 {
		top = traceNiceCeil(float64(maxV)/(1<<20)) * (1 << 20)
	}
	x := func(d time.Duration) float64 { return float64(traceLeft) + plotW*float64(d)/float64(total) }
	y := func(v float64) float64 { return float64(traceTop) + plotH*(1-v/top) }
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", traceW, traceH, traceW, traceH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", traceW, traceH)
	s := t.Summarise()
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`+"\n", traceLeft, html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="%d" y="32" fill="#555">%d GC cycles in %s; GC under way %s of the time, stopped %s; pause p99 %s, max %s</text>`+"\n",
		traceLeft, s.Cycles, traceDur(t.Duration), tracePct(s.GCShare), tracePct(s.STWShare), traceSecs(s.PauseP99Seconds), traceSecs(s.PauseMaxSeconds))
	// GC cycles.
	for i, c := range t.Cycles {
		wd := math.Max(1, x(c.End)-x(c.Start))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%.0f" fill="#f2c14e" fill-opacity="0.35"><title>GC %d at %s: %s long, mark %s, heap %s → %s, goal %s</title></rect>`+"\n",
			x(c.Start), traceTop, wd, plotH, i+1, traceDur(c.Start), traceDur(c.Length()), traceDur(c.Mark()), traceBytes(c.HeapBefore), traceBytes(c.HeapAfter), traceBytes(c.Goal))
	}
	// Axes and grid.
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>`+"\n",
			traceLeft, float64(traceLeft)+plotW, y(v), y(v), traceLeft-6, y(v)+4, traceBytes(uint64(v)))
	}
	step := traceNiceStep(total)
	for d := time.Duration(0); d <= total; d += step {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.0f" stroke="#999"/><text x="%.1f" y="%.0f" text-anchor="middle" fill="#555">%s</text>`+"\n",
			x(d), x(d), traceTop+int(plotH), float64(traceTop)+plotH+4, x(d), float64(traceTop)+plotH+16, traceDur(d))
	}
	// Series.
	line := func(ps []exectrace.Point, colour, dash, name string) {
		if len(ps) == 0 {
			return
		}
		ps = exectrace.Downsample(ps, 2*int(plotW))
		var path strings.Builder
		for i, p := range ps {
			if i == 0 {
				fmt.Fprintf(&path, "M%.1f %.1f", x(p.T), y(float64(p.Value)))
				continue
			}
			// Steps: a value holds until the next.
			fmt.Fprintf(&path, "H%.1fV%.1f", x(p.T), y(float64(p.Value)))
		}
		fmt.Fprintf(&path, "H%.1f", x(total))
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="1.5"%s><title>%s</title></path>`+"\n", path.String(), colour, dash, name)
	}
	line(t.Goal, "#59a14f", ` stroke-dasharray="5 3"`, "heap goal")
	line(t.Heap, "#4e79a7", "", "heap (HeapAlloc)")
	// Pauses.
	py := float64(traceTop) + plotH + 24
	for _, p := range t.Pauses {
		colour := "#999"
		if p.GC {
			colour = "#e15759"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="12" fill="%s"><title>stop-the-world (%s) at %s: %s</title></rect>`+"\n",
			x(p.Start), py, math.Max(1.5, x(p.Start+p.Duration)-x(p.Start)), colour, html.EscapeString(p.Reason), traceDur(p.Start), traceDur(p.Duration))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end" fill="#555">STW</text>`+"\n", traceLeft-6, py+10)
	// Legend.
	ly := traceH - 12
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#4e79a7" stroke-width="2"/><text x="%d" y="%d">heap (HeapAlloc)</text>`+"\n", traceLeft, traceLeft+20, ly-4, ly-4, traceLeft+24, ly)
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#59a14f" stroke-width="2" stroke-dasharray="5 3"/><text x="%d" y="%d">heap goal</text>`+"\n", traceLeft+140, traceLeft+160, ly-4, ly-4, traceLeft+164, ly)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="10" fill="#f2c14e" fill-opacity="0.5"/><text x="%d" y="%d">GC cycle</text>`+"\n", traceLeft+240, ly-9, traceLeft+258, ly)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="10" fill="#e15759"/><text x="%d" y="%d">GC pause</text>`+"\n", traceLeft+330, ly-9, traceLeft+348, ly)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="10" fill="#999"/><text x="%d" y="%d">other pause</text>`+"\n", traceLeft+420, ly-9, traceLeft+438, ly)
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func traceNiceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// niceStep is a tick spacing giving 5 to 10 ticks over total.
func traceNiceStep(total time.Duration) time.Duration {
	step := time.Duration(traceNiceCeil(float64(total) / 10))
	return max(step, 1)
}

// traceHTML writes one self-contained page: the chart, the summary and
// the cycles.
func traceHTML(w io.Writer, t *exectrace.Timeline, title string) error {
	var text strings.Builder
	if err := traceText(&text, t, title); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>\n", html.EscapeString(title))
	b.WriteString("<style>body{font-family:sans-serif;margin:1em}pre{font-size:12px}</style></head><body>\n")
	b.WriteString(svg(t, title))
	fmt.Fprintf(&b, "<pre>%s</pre>\n</body></html>\n", html.EscapeString(text.String()))
	_, err := io.WriteString(w, b.String())
	return err
}
