// Package linechart draws line charts over time as self-contained SVG (and
// HTML around it): series of points, drawn as lines or steps, and marks
// along the time axis for events. No script, no external request; the
// output is deterministic, so it can be golden-tested.
//
// It is pure: values in, bytes out to an io.Writer.
package linechart

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
)

// Point is one value of a series at time X.
type Point struct{ X, Y float64 }

// Series is a named line.
type Series struct {
	Name string
	// Color is an SVG colour, such as "#1f77b4".
	Color  string
	Points []Point
	// Step draws the value held until the next point instead of a slope.
	Step bool
	// Dashed draws a dashed line.
	Dashed bool
}

// Mark is an event at time X, drawn as a tick under the plot.
type Mark struct {
	X     float64
	Color string
	// Title is shown on hover.
	Title string
}

// Chart is a chart to draw.
type Chart struct {
	Title          string
	XLabel, YLabel string
	// XFormat and YFormat format axis values; %g when nil.
	XFormat, YFormat func(float64) string
	Series           []Series
	Marks            []Mark
	// Legend lists extra legend entries for the marks: name → colour.
	MarkLegend []Series
	// Width and Height in pixels; 960×400 when zero.
	Width, Height int
}

const (
	marginLeft   = 80
	marginRight  = 20
	marginTop    = 40
	marginBottom = 70
)

// SVG writes the chart as a standalone SVG document.
func (c *Chart) SVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	width, height := c.Width, c.Height
	if width <= 0 {
		width = 960
	}
	if height <= 0 {
		height = 400
	}
	xf, yf := c.XFormat, c.YFormat
	if xf == nil {
		xf = func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	}
	if yf == nil {
		yf = xf
	}
	x0, x1, y1 := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range c.Series {
		for _, p := range s.Points {
			x0, x1, y1 = math.Min(x0, p.X), math.Max(x1, p.X), math.Max(y1, p.Y)
		}
	}
	for _, m := range c.Marks {
		x0, x1 = math.Min(x0, m.X), math.Max(x1, m.X)
	}
	if math.IsInf(x0, 0) {
		x0, x1 = 0, 1
	}
	if x1 <= x0 {
		x1 = x0 + 1
	}
	if y1 <= 0 {
		y1 = 1
	}
	ystep := niceStep(y1 / 5)
	y1 = math.Ceil(y1/ystep) * ystep
	pw := float64(width - marginLeft - marginRight)
	ph := float64(height - marginTop - marginBottom)
	px := func(x float64) float64 { return marginLeft + (x-x0)/(x1-x0)*pw }
	py := func(y float64) float64 { return marginTop + ph - y/y1*ph }
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	fmt.Fprintf(bw, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", marginLeft, html.EscapeString(c.Title))
	// Grid and y axis.
	for y := 0.0; y <= y1+ystep/2; y += ystep {
		fmt.Fprintf(bw, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#e5e5e5"/>`+"\n", marginLeft, num(py(y)), width-marginRight, num(py(y)))
		fmt.Fprintf(bw, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", marginLeft-6, num(py(y)), html.EscapeString(yf(y)))
	}
	// X axis.
	xstep := niceStep((x1 - x0) / 8)
	for x := math.Ceil(x0/xstep) * xstep; x <= x1+xstep/1e6; x += xstep {
		fmt.Fprintf(bw, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#999"/>`+"\n", num(px(x)), num(py(0)), num(px(x)), num(py(0)+4))
		fmt.Fprintf(bw, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", num(px(x)), num(py(0)+30), html.EscapeString(xf(x)))
	}
	fmt.Fprintf(bw, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#333"/>`+"\n", marginLeft, num(py(0)), width-marginRight, num(py(0)))
	fmt.Fprintf(bw, `<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", num(marginLeft+pw/2), height-22, html.EscapeString(c.XLabel))
	fmt.Fprintf(bw, `<text transform="translate(14 %s) rotate(-90)" text-anchor="middle">%s</text>`+"\n", num(marginTop+ph/2), html.EscapeString(c.YLabel))
	// Series.
	for _, s := range c.Series {
		if len(s.Points) == 0 {
			continue
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="5 3"`
		}
		fmt.Fprintf(bw, `<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="`, html.EscapeString(s.Color), dash)
		for i, p := range s.Points {
			if i > 0 {
				bw.WriteByte(' ')
				if s.Step {
					fmt.Fprintf(bw, "%s,%s ", num(px(p.X)), num(py(s.Points[i-1].Y)))
				}
			}
			fmt.Fprintf(bw, "%s,%s", num(px(p.X)), num(py(p.Y)))
		}
		fmt.Fprintf(bw, `"><title>%s</title></polyline>`+"\n", html.EscapeString(s.Name))
	}
	// Marks under the axis.
	for _, m := range c.Marks {
		fmt.Fprintf(bw, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5"><title>%s</title></line>`+"\n",
			num(px(m.X)), num(py(0)+6), num(px(m.X)), num(py(0)+16), html.EscapeString(m.Color), html.EscapeString(m.Title))
	}
	// Legend.
	lx := float64(marginLeft)
	for _, s := range append(append([]Series(nil), c.Series...), c.MarkLegend...) {
		fmt.Fprintf(bw, `<rect x="%s" y="%d" width="12" height="3" fill="%s"/>`, num(lx), height-8, html.EscapeString(s.Color))
		fmt.Fprintf(bw, `<text x="%s" y="%d">%s</text>`+"\n", num(lx+16), height-4, html.EscapeString(s.Name))
		lx += 16 + 7*float64(len(s.Name)) + 18
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

// HTML writes a page holding the chart's SVG inline, with a title and a
// preformatted text (a summary) under it.
func (c *Chart) HTML(w io.Writer, pre string) error {
	if _, err := fmt.Fprintf(w, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title>\n"+
		"<style>body{font-family:sans-serif;margin:2em}pre{font-size:13px}</style></head><body>\n", html.EscapeString(c.Title)); err != nil {
		return err
	}
	if err := c.SVG(w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "<pre>%s</pre>\n</body></html>\n", html.EscapeString(pre))
	return err
}

// niceStep rounds a raw step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}
