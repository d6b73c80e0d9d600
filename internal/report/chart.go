package report

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/heapscope/heapscope/internal/humanize"
)

// Chart geometry, in the SVG's own units; the charts scale to the page's
// width through their viewBox.
const (
	chartW      = 720
	chartH      = 260
	chartLeft   = 78
	chartRight  = 16
	chartTop    = 16
	chartBottom = 40
)

// point is one value of a chart: x in seconds from the window's start, y in
// the chart's unit, and the tooltip.
type point struct {
	x, y float64
	tip  string
}

// chart describes one inline SVG chart.
type chart struct {
	id, title string
	// xMax is the right end of the x axis (the window's length).
	xMax float64
	// yLabel formats a y value for the axis; yBytes makes its ticks round
	// in KiB, MiB or GiB.
	yLabel func(float64) string
	yBytes bool
	// stems draws a vertical bar from 0 for each point (GC pauses);
	// otherwise a line through the points with a dot on each (heap).
	stems  bool
	points []point
}

// writeSVG writes the chart as an inline <svg>: axes with round ticks,
// the points, and a <title> tooltip on each. Its markup is deterministic.
func (c chart) writeSVG(b *strings.Builder) {
	plotW := float64(chartW - chartLeft - chartRight)
	plotH := float64(chartH - chartTop - chartBottom)
	xMax := c.xMax
	yMax := 0.0
	for _, p := range c.points {
		xMax = math.Max(xMax, p.x)
		yMax = math.Max(yMax, p.y)
	}
	xTicks := ticks(xMax)
	yTicks := ticks(yMax)
	if c.yBytes {
		yTicks = byteTicks(yMax)
	}
	xEnd, yEnd := xTicks[len(xTicks)-1], yTicks[len(yTicks)-1]
	px := func(x float64) float64 { return chartLeft + x/xEnd*plotW }
	py := func(y float64) float64 { return chartTop + plotH - y/yEnd*plotH }

	fmt.Fprintf(b, `<svg class="chart" id="%s" data-points="%d" viewBox="0 0 %d %d" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`+"\n",
		c.id, len(c.points), chartW, chartH, html.EscapeString(c.title))
	for _, y := range yTicks {
		fmt.Fprintf(b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/><text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			chartLeft, chartW-chartRight, py(y), py(y), chartLeft-6, py(y)+4, html.EscapeString(c.yLabel(y)))
	}
	for _, x := range xTicks {
		fmt.Fprintf(b, `<line class="axis" x1="%.1f" x2="%.1f" y1="%d" y2="%d"/><text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n",
			px(x), px(x), chartH-chartBottom, chartH-chartBottom+4, px(x), chartH-chartBottom+18, html.EscapeString(humanize.Seconds(x)))
	}
	fmt.Fprintf(b, `<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`+"\n", chartLeft, chartW-chartRight, chartH-chartBottom, chartH-chartBottom)
	fmt.Fprintf(b, `<text class="label" x="%.1f" y="%d" text-anchor="middle">seconds from the window's start</text>`+"\n", chartLeft+plotW/2, chartH-4)
	if c.stems {
		for _, p := range c.points {
			fmt.Fprintf(b, `<line class="stem" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"><title>%s</title></line>`+"\n",
				px(p.x), px(p.x), py(0), math.Min(py(p.y), py(0)-1), html.EscapeString(p.tip))
		}
	} else if len(c.points) > 0 {
		b.WriteString(`<polyline class="series" points="`)
		for i, p := range c.points {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(b, "%.1f,%.1f", px(p.x), py(p.y))
		}
		b.WriteString(`"/>` + "\n")
		for _, p := range c.points {
			fmt.Fprintf(b, `<circle class="dot" cx="%.1f" cy="%.1f" r="4"><title>%s</title></circle>`+"\n", px(p.x), py(p.y), html.EscapeString(p.tip))
		}
	}
	b.WriteString("</svg>\n")
}

// ticks returns round tick values from 0 to at least max: steps of 1, 2 or
// 5 times a power of ten, about five of them.
func ticks(max float64) []float64 {
	if !(max > 0) || math.IsInf(max, 0) {
		return []float64{0, 1}
	}
	raw := max / 5
	exp := int(math.Floor(math.Log10(raw)))
	// A tick is i×m×10^exp, computed as an integer scaled once so that
	// 3×5e-5 reads 0.00015, not 0.00015000000000000001.
	scale := func(n int) float64 {
		if exp < 0 {
			return float64(n) / math.Pow10(-exp)
		}
		return float64(n) * math.Pow10(exp)
	}
	m := 10
	for _, c := range []int{1, 2, 5} {
		if scale(c) >= raw {
			m = c
			break
		}
	}
	var out []float64
	for i := 0; ; i++ {
		out = append(out, scale(i*m))
		if out[i] >= max {
			return out
		}
	}
}

// byteTicks returns ticks that are round in the binary unit of max.
func byteTicks(max float64) []float64 {
	scale := 1.0
	for max/scale >= 1024 {
		scale *= 1024
	}
	out := ticks(max / scale)
	for i := range out {
		out[i] *= scale
	}
	return out
}
