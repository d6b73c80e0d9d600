// Package chart draws heapscope's charts as SVG: series over an x axis
// (lines, steps, lines with a dot per point, stems), shaded bands, marks
// in a row under the axis, a legend, and axes whose ticks are nice
// numbers, one algorithm for every axis (Ticks): a step of 1, 2 or 5
// times a power of ten (of 1024 for bytes), about one every 80 pixels
// across and 40 up. It is the one drawer
// behind report.html's heap and GC-pause charts, gctrace --plot and the
// trace command's GC timeline.
//
// The markup is self-contained (no script, no external request; colours
// are attributes, so the chart reads the same inline in a page or as a
// file of its own) and deterministic, so it is golden-tested. It is
// pure: a Chart in, SVG out to an io.Writer.
package chart

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"

	"github.com/heapscope/heapscope/internal/humanize"
)

// Point is one value of a series.
type Point struct {
	X, Y float64
	// Tip is shown on hover over the point's dot or stem.
	Tip string
}

// Style is how a series is drawn.
type Style int

// The styles of a series.
const (
	// Line joins the points.
	Line Style = iota
	// Step holds each value until the next point.
	Step
	// Dots joins the points and draws a dot on each, with its tip.
	Dots
	// Stems draws a bar from 0 to each point, with its tip.
	Stems
)

// Series is a named set of points.
type Series struct {
	// Name is the series' entry in the legend and its tooltip.
	Name string
	// Color is an SVG colour, such as "#4e79a7".
	Color  string
	Style  Style
	Dashed bool
	Points []Point
}

// Band shades the plot's whole height from From to To, such as a GC
// cycle under way.
type Band struct {
	From, To float64
	Color    string
	Tip      string
}

// Mark is an event drawn in a row under the x axis, from X for Width
// (at least a thin bar), such as a stop-the-world pause.
type Mark struct {
	X, Width float64
	Color    string
	Tip      string
}

// Key is a legend entry for what is not a series: bands and marks.
type Key struct {
	Name, Color string
	// Faint draws the key as a band is drawn.
	Faint bool
}

// Axis says how an axis reads and how far it goes.
type Axis struct {
	// Label names the axis.
	Label string
	// Format writes a tick's value; four significant digits when nil.
	Format func(float64) string
	// Bytes makes the ticks round in the binary unit of the axis' end
	// (KiB, MiB, GiB): 0, 16 MiB, 32 MiB rather than 0, 20 MB, 40 MB.
	Bytes bool
	// Max makes the axis reach at least Max, such as a window's length
	// when the last point falls before its end.
	Max float64
	// Tight starts the axis at the smallest value drawn instead of 0,
	// for times counted from before the chart's first point.
	Tight bool
	// Min, with Tight, makes the axis start at Min or before, such as a
	// time range's start when the first point comes after it.
	Min float64
}

// Chart is a chart to draw.
type Chart struct {
	// ID is the id of the svg element; none when empty.
	ID string
	// Title is drawn above the plot; Label is the chart's accessible name
	// (its Title when empty), for a chart whose page says what it is.
	Title, Label string
	// Subtitle is a line under the title.
	Subtitle string
	// Width and Height in pixels; 960×400 when zero.
	Width, Height int
	X, Y          Axis
	Series        []Series
	Bands         []Band
	Marks         []Mark
	// MarksLabel names the row of marks, at its left.
	MarksLabel string
	// Keys are legend entries for the bands and marks. The legend, the
	// series' names and the keys, is drawn when it has two entries or
	// more.
	Keys []Key
	// Spark draws the series alone, a sparkline filling Width×Height:
	// no title, axes, ticks, bands, marks or legend. X.Min and X.Max
	// bound its x when set; its y spans the points'.
	Spark bool
}

// Layout, in pixels.
const (
	marginLeft  = 80
	yLabelWidth = 16
	// marginRight leaves room for half the last x tick label.
	marginRight = 32
	marginTop   = 16
	titleHeight = 22
	subHeight   = 16
	tickRow     = 22
	markRow     = 18
	markHeight  = 10
	xLabelRow   = 18
	legendRow   = 22
	marginEnd   = 6
)

// WriteSVG writes the chart as an svg element, usable as a document of
// its own or inline in HTML.
func (c *Chart) WriteSVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	c.write(bw)
	return bw.Flush()
}

// layout is where a chart's parts go, in pixels.
type layout struct {
	width, height, top, left int
	plotW, plotH             float64
	legend                   []legendEntry
}

func (c *Chart) layout() layout {
	l := layout{width: c.Width, height: c.Height, top: marginTop, left: marginLeft, legend: c.legend()}
	if l.width <= 0 {
		l.width = 960
	}
	if l.height <= 0 {
		l.height = 400
	}
	if c.Title != "" {
		l.top += titleHeight
	}
	if c.Subtitle != "" {
		l.top += subHeight
	}
	if c.Y.Label != "" {
		l.left += yLabelWidth
	}
	bottom := tickRow + marginEnd
	if len(c.Marks) > 0 {
		bottom += markRow
	}
	if c.X.Label != "" {
		bottom += xLabelRow
	}
	if len(l.legend) > 1 {
		bottom += legendRow
	}
	l.plotW = float64(l.width - l.left - marginRight)
	l.plotH = float64(l.height - l.top - bottom)
	return l
}

// XScale says where a chart's plot lies across its width and which x
// values the plot's edges stand for: what a script on the page needs to
// map a pointer's position to an x.
type XScale struct {
	// Width is the chart's width in pixels.
	Width int
	// Left and Right are the plot's edges, in pixels from the chart's left.
	Left, Right float64
	// From and To are the x values at Left and Right.
	From, To float64
}

// XScale returns the chart's x scale, as WriteSVG draws it.
func (c *Chart) XScale() XScale {
	l := c.layout()
	xTicks, _ := c.ticks(l.plotW, l.plotH)
	return XScale{Width: l.width, Left: float64(l.left), Right: float64(l.left) + l.plotW,
		From: xTicks[0], To: xTicks[len(xTicks)-1]}
}

func (c *Chart) write(b *bufio.Writer) {
	if c.Spark {
		c.writeSpark(b)
		return
	}
	e := html.EscapeString
	l := c.layout()
	width, height, top, left, legend := l.width, l.height, l.top, l.left, l.legend
	plotW, plotH := l.plotW, l.plotH

	xTicks, yTicks := c.ticks(plotW, plotH)
	x0, x1 := xTicks[0], xTicks[len(xTicks)-1]
	y0, y1 := yTicks[0], yTicks[len(yTicks)-1]
	px := func(x float64) float64 { return float64(left) + (x-x0)/(x1-x0)*plotW }
	py := func(y float64) float64 { return float64(top) + plotH - (y-y0)/(y1-y0)*plotH }
	base := py(max(y0, 0))
	axisY := float64(top) + plotH
	n := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

	label := c.Label
	if label == "" {
		label = c.Title
	}
	id := ""
	if c.ID != "" {
		id = ` id="` + e(c.ID) + `"`
	}
	points := 0
	for _, s := range c.Series {
		points += len(s.Points)
	}
	// data-points says how many points the series hold, for tests and
	// scripts.
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart"%s data-points="%d" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s" font-family="sans-serif" font-size="11">`+"\n",
		id, points, width, height, width, height, e(label))
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	ty := marginTop
	if c.Title != "" {
		ty += titleHeight - 8
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", left, ty, e(c.Title))
	}
	if c.Subtitle != "" {
		ty += subHeight
		fmt.Fprintf(b, `<text x="%d" y="%d" fill="#555">%s</text>`+"\n", left, ty, e(c.Subtitle))
	}

	for _, band := range c.Bands {
		fmt.Fprintf(b, `<rect class="band" x="%s" y="%d" width="%s" height="%s" fill="%s" fill-opacity="0.35"%s`+"\n",
			n(px(band.From)), top, n(math.Max(1, px(band.To)-px(band.From))), n(plotH), e(band.Color), closeTag("rect", band.Tip))
	}
	yFormat := formatter(c.Y.Format)
	for _, y := range yTicks {
		fmt.Fprintf(b, `<line class="grid" x1="%d" x2="%d" y1="%s" y2="%s" stroke="#e5e5e5"/><text class="tick" x="%d" y="%s" text-anchor="end" fill="#555">%s</text>`+"\n",
			left, width-marginRight, n(py(y)), n(py(y)), left-6, n(py(y)+4), e(yFormat(y)))
	}
	xFormat := formatter(c.X.Format)
	for _, x := range xTicks {
		fmt.Fprintf(b, `<line class="axis" x1="%s" x2="%s" y1="%s" y2="%s" stroke="#888"/><text class="tick" x="%s" y="%s" text-anchor="middle" fill="#555">%s</text>`+"\n",
			n(px(x)), n(px(x)), n(axisY), n(axisY+4), n(px(x)), n(axisY+16), e(xFormat(x)))
	}
	fmt.Fprintf(b, `<line class="axis" x1="%d" x2="%d" y1="%s" y2="%s" stroke="#888"/>`+"\n", left, width-marginRight, n(axisY), n(axisY))

	for _, s := range c.Series {
		writeSeries(b, s, px, py, base)
	}

	row := axisY + tickRow
	if len(c.Marks) > 0 {
		for _, m := range c.Marks {
			fmt.Fprintf(b, `<rect class="mark" x="%s" y="%s" width="%s" height="%d" fill="%s"%s`+"\n",
				n(px(m.X)), n(row), n(math.Max(1.5, px(m.X+m.Width)-px(m.X))), markHeight, e(m.Color), closeTag("rect", m.Tip))
		}
		if c.MarksLabel != "" {
			fmt.Fprintf(b, `<text x="%d" y="%s" text-anchor="end" fill="#555">%s</text>`+"\n", left-6, n(row+markHeight-1), e(c.MarksLabel))
		}
		row += markRow
	}
	if c.X.Label != "" {
		fmt.Fprintf(b, `<text class="label" x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", n(float64(left)+plotW/2), n(row+12), e(c.X.Label))
		row += xLabelRow
	}
	if c.Y.Label != "" {
		fmt.Fprintf(b, `<text class="label" transform="translate(14 %s) rotate(-90)" text-anchor="middle">%s</text>`+"\n", n(float64(top)+plotH/2), e(c.Y.Label))
	}
	if len(legend) > 1 {
		lx := float64(left)
		ly := row + 14
		for _, k := range legend {
			switch {
			case k.box:
				opacity := ""
				if k.faint {
					opacity = ` fill-opacity="0.5"`
				}
				fmt.Fprintf(b, `<rect x="%s" y="%s" width="14" height="10" fill="%s"%s/>`, n(lx), n(ly-9), e(k.color), opacity)
			default:
				fmt.Fprintf(b, `<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`, n(lx), n(lx+14), n(ly-4), n(ly-4), e(k.color), dash(k.dashed))
			}
			fmt.Fprintf(b, `<text x="%s" y="%s">%s</text>`+"\n", n(lx+18), n(ly), e(k.name))
			lx += 18 + 6.5*float64(len([]rune(k.name))) + 18
		}
	}
	b.WriteString("</svg>\n")
}

// sparkPad keeps a sparkline's line off its top and bottom edges.
const sparkPad = 2

// writeSpark writes the chart as a sparkline (Spark).
func (c *Chart) writeSpark(b *bufio.Writer) {
	l := c.layout()
	label := c.Label
	if label == "" {
		label = c.Title
	}
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" class="sparkline" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		l.width, l.height, l.width, l.height, html.EscapeString(label))
	var pts []Point
	for _, s := range c.Series {
		pts = append(pts, s.Points...)
	}
	if len(pts) > 0 {
		x0, x1 := c.X.Min, c.X.Max
		if x1 <= x0 {
			x0, x1 = pts[0].X, pts[0].X
			for _, p := range pts {
				x0, x1 = math.Min(x0, p.X), math.Max(x1, p.X)
			}
		}
		y0, y1 := pts[0].Y, pts[0].Y
		for _, p := range pts {
			y0, y1 = math.Min(y0, p.Y), math.Max(y1, p.Y)
		}
		if x1 == x0 {
			x0, x1 = x0-1, x1+1
		}
		if y1 == y0 {
			y0, y1 = y0-1, y1+1
		}
		w, h := float64(l.width), float64(l.height)
		px := func(x float64) float64 { return (x - x0) / (x1 - x0) * w }
		py := func(y float64) float64 { return h - sparkPad - (y-y0)/(y1-y0)*(h-2*sparkPad) }
		for _, s := range c.Series {
			writeSeries(b, s, px, py, h)
		}
	}
	b.WriteString("</svg>")
}

func writeSeries(b *bufio.Writer, s Series, px, py func(float64) float64, base float64) {
	e := html.EscapeString
	n := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	if len(s.Points) == 0 {
		return
	}
	if s.Style == Stems {
		for _, p := range s.Points {
			fmt.Fprintf(b, `<line class="stem" x1="%s" x2="%s" y1="%s" y2="%s" stroke="%s" stroke-width="3"%s`+"\n",
				n(px(p.X)), n(px(p.X)), n(base), n(math.Min(py(p.Y), base-1)), e(s.Color), closeTag("line", p.Tip))
		}
		return
	}
	fmt.Fprintf(b, `<polyline class="series" fill="none" stroke="%s" stroke-width="1.5"%s points="`, e(s.Color), dash(s.Dashed))
	for i, p := range s.Points {
		if i > 0 {
			b.WriteByte(' ')
			if s.Style == Step {
				fmt.Fprintf(b, "%s,%s ", n(px(p.X)), n(py(s.Points[i-1].Y)))
			}
		}
		fmt.Fprintf(b, "%s,%s", n(px(p.X)), n(py(p.Y)))
	}
	fmt.Fprintf(b, `"%s`+"\n", closeTag("polyline", s.Name))
	if s.Style == Dots {
		for _, p := range s.Points {
			fmt.Fprintf(b, `<circle class="dot" cx="%s" cy="%s" r="3.5" fill="%s"%s`+"\n", n(px(p.X)), n(py(p.Y)), e(s.Color), closeTag("circle", p.Tip))
		}
	}
}

// closeTag ends an element opened up to its attributes: with a tooltip
// when tip is set, otherwise empty.
func closeTag(name, tip string) string {
	if tip == "" {
		return "/>"
	}
	return "><title>" + html.EscapeString(tip) + "</title></" + name + ">"
}

func dash(dashed bool) string {
	if dashed {
		return ` stroke-dasharray="5 3"`
	}
	return ""
}

func formatter(f func(float64) string) func(float64) string {
	if f != nil {
		return f
	}
	return humanize.Number
}

type legendEntry struct {
	name, color        string
	dashed, box, faint bool
}

func (c *Chart) legend() []legendEntry {
	var out []legendEntry
	for _, s := range c.Series {
		if s.Name != "" {
			out = append(out, legendEntry{name: s.Name, color: s.Color, dashed: s.Dashed, box: s.Style == Stems})
		}
	}
	for _, k := range c.Keys {
		out = append(out, legendEntry{name: k.Name, color: k.Color, box: true, faint: k.Faint})
	}
	return out
}

// ticks returns the ticks of both axes, which span every point, band
// and mark, a step every so many pixels of the plot's width and height.
func (c *Chart) ticks(plotW, plotH float64) (xs, ys []float64) {
	xLo, xHi := math.Inf(1), math.Inf(-1)
	yLo, yHi := 0.0, 0.0
	see := func(x float64) {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			xLo, xHi = math.Min(xLo, x), math.Max(xHi, x)
		}
	}
	for _, s := range c.Series {
		for _, p := range s.Points {
			see(p.X)
			if !math.IsNaN(p.Y) && !math.IsInf(p.Y, 0) {
				yLo, yHi = math.Min(yLo, p.Y), math.Max(yHi, p.Y)
			}
		}
	}
	for _, band := range c.Bands {
		see(band.From)
		see(band.To)
	}
	for _, m := range c.Marks {
		see(m.X)
		see(m.X + m.Width)
	}
	if math.IsInf(xLo, 0) {
		xLo, xHi = 0, 0
	}
	if !c.X.Tight {
		xLo = math.Min(xLo, 0)
	} else if c.X.Min != 0 {
		xLo = math.Min(xLo, c.X.Min)
	}
	xHi = math.Max(xHi, c.X.Max)
	yHi = math.Max(yHi, c.Y.Max)
	return axisTicks(xLo, xHi, c.X.Bytes, plotW, xStepPixels), axisTicks(yLo, yHi, c.Y.Bytes, plotH, yStepPixels)
}

// Pixels per step of the ticks: wide enough apart across for a label
// such as "150.0ms", tall enough apart up for the text's height.
const (
	xStepPixels = 80
	yStepPixels = 40
)

func axisTicks(lo, hi float64, bytes bool, pixels, perStep float64) []float64 {
	steps := int(math.Round(pixels / perStep))
	if bytes {
		return ByteTicks(lo, hi, steps)
	}
	return Ticks(lo, hi, steps)
}

// Ticks returns nice values spanning lo to hi, at most steps steps of
// them (and at least about two fifths of that): multiples of a step of 1,
// 2 or 5 times a power of ten, from the last at or below lo to the first
// at or above hi. An invalid range gives 0 and 1; a single value, the
// whole numbers around it.
func Ticks(lo, hi float64, steps int) []float64 {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || hi < lo {
		return []float64{0, 1}
	}
	if hi == lo {
		lo, hi = math.Floor(lo), math.Floor(lo)+1
	}
	raw := (hi - lo) / float64(max(steps, 1))
	exp := int(math.Floor(math.Log10(raw)))
	m := 10
	for _, c := range []int{1, 2, 5} {
		if scaled(c, exp) >= raw {
			m = c
			break
		}
	}
	if m == 10 {
		m, exp = 1, exp+1
	}
	step := scaled(m, exp)
	// A little slack keeps a bound that is a multiple of the step up to
	// rounding from growing a tick.
	first := int64(math.Floor(lo/step + 1e-9))
	last := int64(math.Ceil(hi/step - 1e-9))
	out := make([]float64, 0, last-first+1)
	for k := first; k <= last; k++ {
		out = append(out, scaled64(k*int64(m), exp))
	}
	if len(out) < 2 {
		out = append(out, scaled64((last+1)*int64(m), exp))
	}
	return out
}

// ByteTicks is Ticks in the binary unit of hi: ticks of a MiB range are
// nice numbers of MiB.
func ByteTicks(lo, hi float64, steps int) []float64 {
	unit := 1.0
	for math.Max(math.Abs(lo), math.Abs(hi))/unit >= 1024 {
		unit *= 1024
	}
	out := Ticks(lo/unit, hi/unit, steps)
	for i := range out {
		out[i] *= unit
	}
	return out
}

// scaled is n×10^exp, computed from an integer so that 3×10⁻⁵ reads
// 0.00003, not 3.0000000000000004e-05.
func scaled(n, exp int) float64 { return scaled64(int64(n), exp) }

func scaled64(n int64, exp int) float64 {
	if exp < 0 {
		return float64(n) / math.Pow10(-exp)
	}
	return float64(n) * math.Pow10(exp)
}
