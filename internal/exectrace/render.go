package exectrace

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"

	"github.com/heapscope/heapscope/internal/result"
)

// DefaultMaxPoints is how many points of each series a Result keeps.
const DefaultMaxPoints = 1000

// Result returns the timeline as result.json carries it, keeping at most maxPoints
// points of each series (DefaultMaxPoints when 0).
func (t *Timeline) Result(maxPoints int) *result.Trace {
	if maxPoints <= 0 {
		maxPoints = DefaultMaxPoints
	}
	r := &result.Trace{Summary: t.Summarise(), Cycles: []result.TraceCycle{}, Pauses: []result.TracePause{}}
	for _, c := range t.Cycles {
		r.Cycles = append(r.Cycles, result.TraceCycle{
			StartSeconds: c.Start.Seconds(), EndSeconds: c.End.Seconds(), MarkSeconds: c.Mark().Seconds(),
			SweepTerminationSeconds: c.SweepTermination.Seconds(), MarkTerminationSeconds: c.MarkTermination.Seconds(),
			HeapBeforeBytes: c.HeapBefore, HeapAfterBytes: c.HeapAfter, GoalBytes: c.Goal, Partial: c.Partial,
		})
	}
	for _, p := range t.Pauses {
		r.Pauses = append(r.Pauses, result.TracePause{StartSeconds: p.Start.Seconds(), DurationSeconds: p.Duration.Seconds(), Reason: p.Reason, GC: p.GC, Partial: p.Partial})
	}
	r.Heap = pairs(Downsample(t.Heap, maxPoints))
	r.Goal = pairs(Downsample(t.Goal, maxPoints))
	return r
}

func pairs(ps []Point) [][2]float64 {
	out := make([][2]float64, len(ps))
	for i, p := range ps {
		out[i] = [2]float64{p.T.Seconds(), float64(p.Value)}
	}
	return out
}

// WriteJSON writes the timeline's Result as indented JSON.
func WriteJSON(w io.Writer, t *Timeline) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(t.Result(0))
}

// WriteText writes the summary and a table of the cycles.
func WriteText(w io.Writer, t *Timeline, title string) error {
	var b strings.Builder
	s := t.Summarise()
	fmt.Fprintf(&b, "GC timeline of %s: %s traced, %d events\n\n", title, dur(t.Duration), t.Events)
	fmt.Fprintf(&b, "GC cycles        %d (%d complete), %.1f/s\n", s.Cycles, s.CompleteCycles, s.CyclesPerSecond)
	fmt.Fprintf(&b, "time in GC       %s of wall time (a cycle under way)\n", pct(s.GCShare))
	fmt.Fprintf(&b, "stopped (STW)    %s of wall time; GC pauses %s\n", pct(s.STWShare), pct(s.GCSTWShare))
	if s.Pauses > 0 {
		fmt.Fprintf(&b, "pauses           %d (%d GC), p50 %s, p99 %s, max %s\n", s.Pauses, s.GCPauses,
			secs(s.PauseP50Seconds), secs(s.PauseP99Seconds), secs(s.PauseMaxSeconds))
	} else {
		b.WriteString("pauses           none\n")
	}
	if s.CompleteCycles > 0 {
		fmt.Fprintf(&b, "mark phase       mean %s, max %s\n", secs(s.MarkMeanSeconds), secs(s.MarkMaxSeconds))
	}
	fmt.Fprintf(&b, "mark assists     %s in total\n", secs(s.MarkAssistSeconds))
	if len(t.Heap) > 0 {
		fmt.Fprintf(&b, "heap (HeapAlloc) %s to %s; last goal %s\n", bytesStr(s.HeapMinBytes), bytesStr(s.HeapMaxBytes), bytesStr(s.GoalLastBytes))
	}
	if len(t.Cycles) > 0 {
		b.WriteString("\n  #  start      length     mark       sweep-term  mark-term   heap before  heap after  goal\n")
		for i, c := range t.Cycles {
			mark := ""
			if c.Partial {
				mark = "  (partial)"
			}
			fmt.Fprintf(&b, "%3d  %-9s  %-9s  %-9s  %-10s  %-10s  %-11s  %-10s  %s%s\n", i+1,
				dur(c.Start), dur(c.Length()), dur(c.Mark()), dur(c.SweepTermination), dur(c.MarkTermination),
				bytesStr(c.HeapBefore), bytesStr(c.HeapAfter), bytesStr(c.Goal), mark)
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
				fmt.Fprintf(&b, " %s at %s (%s);", p.Reason, dur(p.Start), dur(p.Duration))
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, strings.TrimSuffix(b.String(), ";\n")+map[bool]string{true: "\n", false: ""}[strings.HasSuffix(b.String(), ";\n")])
	return err
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func secs(s float64) string { return dur(time.Duration(s * 1e9)) }

// dur prints a duration with three significant digits.
func dur(d time.Duration) string {
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

func bytesStr(v uint64) string {
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
	chartW     = 1000
	chartH     = 420
	chartLeft  = 80
	chartRight = 20
	chartTop   = 40
	chartBot   = 70
)

// WriteSVG draws the timeline: HeapAlloc and the heap goal over time,
// each GC cycle as a shaded band, and the stop-the-world pauses as marks
// under the plot (red for the GC's, grey for others).
func WriteSVG(w io.Writer, t *Timeline, title string) error {
	_, err := io.WriteString(w, svg(t, title))
	return err
}

func svg(t *Timeline, title string) string {
	var b strings.Builder
	plotW := float64(chartW - chartLeft - chartRight)
	plotH := float64(chartH - chartTop - chartBot)
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
	top := niceCeil(float64(maxV))
	if maxV >= 1<<20 {
		top = niceCeil(float64(maxV)/(1<<20)) * (1 << 20)
	}
	x := func(d time.Duration) float64 { return float64(chartLeft) + plotW*float64(d)/float64(total) }
	y := func(v float64) float64 { return float64(chartTop) + plotH*(1-v/top) }
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", chartW, chartH)
	s := t.Summarise()
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`+"\n", chartLeft, html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="%d" y="32" fill="#555">%d GC cycles in %s; GC under way %s of the time, stopped %s; pause p99 %s, max %s</text>`+"\n",
		chartLeft, s.Cycles, dur(t.Duration), pct(s.GCShare), pct(s.STWShare), secs(s.PauseP99Seconds), secs(s.PauseMaxSeconds))
	// GC cycles.
	for i, c := range t.Cycles {
		wd := math.Max(1, x(c.End)-x(c.Start))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%.0f" fill="#f2c14e" fill-opacity="0.35"><title>GC %d at %s: %s long, mark %s, heap %s → %s, goal %s</title></rect>`+"\n",
			x(c.Start), chartTop, wd, plotH, i+1, dur(c.Start), dur(c.Length()), dur(c.Mark()), bytesStr(c.HeapBefore), bytesStr(c.HeapAfter), bytesStr(c.Goal))
	}
	// Axes and grid.
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>`+"\n",
			chartLeft, float64(chartLeft)+plotW, y(v), y(v), chartLeft-6, y(v)+4, bytesStr(uint64(v)))
	}
	step := niceStep(total)
	for d := time.Duration(0); d <= total; d += step {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.0f" stroke="#999"/><text x="%.1f" y="%.0f" text-anchor="middle" fill="#555">%s</text>`+"\n",
			x(d), x(d), chartTop+int(plotH), float64(chartTop)+plotH+4, x(d), float64(chartTop)+plotH+16, dur(d))
	}
	// Series.
	line := func(ps []Point, colour, dash, name string) {
		if len(ps) == 0 {
			return
		}
		ps = Downsample(ps, 2*int(plotW))
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
	py := float64(chartTop) + plotH + 24
	for _, p := range t.Pauses {
		colour := "#999"
		if p.GC {
			colour = "#e15759"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="12" fill="%s"><title>stop-the-world (%s) at %s: %s</title></rect>`+"\n",
			x(p.Start), py, math.Max(1.5, x(p.Start+p.Duration)-x(p.Start)), colour, html.EscapeString(p.Reason), dur(p.Start), dur(p.Duration))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end" fill="#555">STW</text>`+"\n", chartLeft-6, py+10)
	// Legend.
	ly := chartH - 12
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#4e79a7" stroke-width="2"/><text x="%d" y="%d">heap (HeapAlloc)</text>`+"\n", chartLeft, chartLeft+20, ly-4, ly-4, chartLeft+24, ly)
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#59a14f" stroke-width="2" stroke-dasharray="5 3"/><text x="%d" y="%d">heap goal</text>`+"\n", chartLeft+140, chartLeft+160, ly-4, ly-4, chartLeft+164, ly)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="10" fill="#f2c14e" fill-opacity="0.5"/><text x="%d" y="%d">GC cycle</text>`+"\n", chartLeft+240, ly-9, chartLeft+258, ly)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="10" fill="#e15759"/><text x="%d" y="%d">GC pause</text>`+"\n", chartLeft+330, ly-9, chartLeft+348, ly)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="10" fill="#999"/><text x="%d" y="%d">other pause</text>`+"\n", chartLeft+420, ly-9, chartLeft+438, ly)
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
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
func niceStep(total time.Duration) time.Duration {
	step := time.Duration(niceCeil(float64(total) / 10))
	return max(step, 1)
}

// WriteHTML writes one self-contained page: the chart, the summary and
// the cycles.
func WriteHTML(w io.Writer, t *Timeline, title string) error {
	var text strings.Builder
	if err := WriteText(&text, t, title); err != nil {
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
