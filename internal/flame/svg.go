package flame

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

//go:embed assets/svg.js
var svgScript string

//go:embed assets/svg.css
var svgStyle string

// SVGOptions tune WriteSVG.
type SVGOptions struct {
	// Title heads the graph; empty means "Flame graph" (or "Differential
	// flame graph").
	Title string
	// Subtitle is a second line, such as the profile's name.
	Subtitle string
	// Sample is the sample type drawn; empty means the tree's default.
	Sample string
	// Width is the image's width in pixels; 0 means 1200.
	Width int
	// Icicle draws the root on top instead of at the bottom.
	Icicle bool
	// MinWidth leaves out frames narrower than this many pixels (and
	// their descendants), as flamegraph.pl does; 0 means 0.1.
	MinWidth float64
}

// SVG layout, in pixels.
const (
	svgFrameHeight = 16
	svgFontSize    = 12
	svgPad         = 10
	svgTop         = 84
	svgBottom      = 30
)

// WriteSVG writes t as a self-contained SVG flame graph in the tradition
// of flamegraph.pl: frames sized by value and labelled with short function
// names, a tooltip per frame with the full name, file:line, value and
// share (before, after and change for a differential tree), click to zoom
// into a frame and back, and a search box that highlights the matching
// frames and shows their share. Its script and style are inline, so it
// works opened straight from disk.
func WriteSVG(w io.Writer, t *Tree, opts SVGOptions) error {
	typ, err := t.TypeIndex(opts.Sample)
	if err != nil {
		return err
	}
	if opts.Width <= 0 {
		opts.Width = 1200
	}
	if opts.MinWidth <= 0 {
		opts.MinWidth = 0.1
	}
	if opts.Title == "" {
		opts.Title = "Flame graph"
		if t.Diff != nil {
			opts.Title = "Differential flame graph"
		}
	}
	st := t.Types[typ]
	drawW := float64(opts.Width - 2*svgPad)
	lay := layout(t, typ, drawW, opts.MinWidth)
	height := svgTop + (lay.maxDepth+1)*svgFrameHeight + svgBottom

	bw := bufio.NewWriterSize(w, 64<<10)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p(`<?xml version="1.0" standalone="no"?>` + "\n")
	p(`<svg version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">`+"\n",
		opts.Width, height, opts.Width, height)
	p("<style type=\"text/css\"><![CDATA[\n%s]]></style>\n", svgStyle)
	cfg, err := json.Marshal(map[string]any{
		"pad": svgPad, "drawWidth": drawW, "fontSize": svgFontSize, "unit": st.Unit,
		"total": t.Total(0, typ), "diff": t.Diff != nil,
	})
	if err != nil {
		return fmt.Errorf("write svg: %w", err)
	}
	p("<script type=\"text/ecmascript\"><![CDATA[\nvar flameConfig = %s;\n%s]]></script>\n", cfg, svgScript)
	p(`<rect class="background" x="0" y="0" width="%d" height="%d"/>`+"\n", opts.Width, height)
	p(`<text id="title" x="%d" y="24">%s</text>`+"\n", opts.Width/2, esc(opts.Title))
	sub := opts.Subtitle
	if sub != "" {
		sub += " · "
	}
	sub += fmt.Sprintf("%s, total %s", st.Name, formatValue(float64(t.Total(0, typ)), st.Unit))
	if d := t.Diff; d != nil {
		sub += fmt.Sprintf(" · coloured by %s change", d.By)
		if d.Vanished {
			sub += " · base profile's shape: frames that vanished"
		}
	}
	p(`<text id="subtitle" x="%d" y="44">%s</text>`+"\n", opts.Width/2, esc(sub))
	p(`<text id="reset" class="button hidden" x="%d" y="24">Reset Zoom</text>`+"\n", svgPad)
	p(`<foreignObject x="%d" y="52" width="240" height="26"><input xmlns="http://www.w3.org/1999/xhtml" id="search" type="search" placeholder="Search (regexp)" autocomplete="off"/></foreignObject>`+"\n",
		opts.Width-svgPad-240)
	writeLegend(p, t)
	p(`<text id="matched" x="%d" y="%d"></text>`+"\n", opts.Width-svgPad, height-10)
	p(`<text id="details" x="%d" y="%d"> </text>`+"\n", svgPad, height-10)

	var line, tip []byte
	for _, n := range lay.order {
		node := t.Nodes[n]
		row := lay.maxDepth - int(node.Depth)
		if opts.Icicle {
			row = int(node.Depth)
		}
		y := svgTop + row*svgFrameHeight
		x, wpx := lay.x[n]*drawW, lay.w[n]*drawW
		name := t.Name(n)
		short := ShortName(name)
		if n == 0 {
			short = "all"
		}
		tip = appendTooltip(tip[:0], t, n, typ)
		line = append(line[:0], `<g class="f" data-x="`...)
		line = strconv.AppendFloat(line, lay.x[n], 'g', 8, 64)
		line = append(line, `" data-w="`...)
		line = strconv.AppendFloat(line, lay.w[n], 'g', 8, 64)
		line = append(line, `" data-d="`...)
		line = strconv.AppendInt(line, int64(node.Depth), 10)
		line = append(line, `" data-n="`...)
		line = appendEsc(line, name)
		line = append(line, `"><title>`...)
		line = appendEsc(line, string(tip))
		line = append(line, `</title><rect x="`...)
		line = strconv.AppendFloat(line, svgPad+x, 'f', 2, 64)
		line = append(line, `" y="`...)
		line = strconv.AppendInt(line, int64(y), 10)
		line = append(line, `" width="`...)
		line = strconv.AppendFloat(line, wpx, 'f', 2, 64)
		line = append(line, `" height="`...)
		line = strconv.AppendInt(line, svgFrameHeight-1, 10)
		line = append(line, `" fill="`...)
		line = frameFill(t, n, typ).appendTo(line)
		line = append(line, `" rx="2" ry="2"/><text x="`...)
		line = strconv.AppendFloat(line, svgPad+x+3, 'f', 2, 64)
		line = append(line, `" y="`...)
		line = strconv.AppendFloat(line, float64(y)+10.5, 'f', 1, 64)
		line = append(line, `">`...)
		line = appendEsc(line, fitLabel(short, wpx))
		line = append(line, "</text></g>\n"...)
		bw.Write(line)
	}
	p("</svg>\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write svg: %w", err)
	}
	return nil
}

func writeLegend(p func(string, ...any), t *Tree) {
	type entry struct {
		label string
		fill  rgb
	}
	var entries []entry
	if t.Diff != nil {
		entries = []entry{{"grew", changeColour(0.8)}, {"shrank", changeColour(-0.8)}, {"unchanged", neutralColour}}
	} else {
		seen := map[Kind]bool{}
		for _, f := range t.Functions {
			seen[f.Kind] = true
		}
		for _, k := range []Kind{KindApp, KindDependency, KindStd, KindRuntime, KindUnknown} {
			if seen[k] {
				entries = append(entries, entry{k.String(), kindColour(k, "")})
			}
		}
	}
	x := svgPad
	for _, e := range entries {
		p(`<rect class="legend" x="%d" y="60" width="12" height="12" fill="%s"/><text class="legend" x="%d" y="70">%s</text>`+"\n", x, e.fill, x+16, esc(e.label))
		x += 16 + 8*len(e.label) + 18
	}
}

// frameFill is a frame's colour: by kind, or by change in a diff.
func frameFill(t *Tree, n, typ int) rgb {
	if t.Diff != nil {
		return changeColour(t.Change(n, typ))
	}
	if n == 0 {
		return rgb{200, 200, 200}
	}
	f := t.Functions[t.Nodes[n].Function]
	return kindColour(f.Kind, f.Name)
}

// appendTooltip appends the text people see over a frame.
func appendTooltip(b []byte, t *Tree, n, typ int) []byte {
	st := t.Types[typ]
	if n == 0 {
		b = append(b, "all"...)
	} else {
		f := t.Functions[t.Nodes[n].Function]
		b = append(b, f.Name...)
		b = append(b, '\n')
		b = append(b, location(f, t.Nodes[n])...)
		b = append(b, " · "...)
		b = append(b, f.Kind.String()...)
	}
	b = append(b, '\n')
	if d := t.Diff; d != nil {
		before, after := t.Before(n, typ), t.After(n, typ)
		unit := ""
		if d.PerUnit != "" {
			unit = "/" + d.PerUnit
		}
		b = fmt.Appendf(b, "before %s%s → after %s%s: %s%s", formatValue(before, st.Unit), unit, formatValue(after, st.Unit), unit, signed(after-before, st.Unit), unit)
		if before != 0 {
			b = fmt.Appendf(b, " (%+.1f%%)", (after-before)/abs64(before)*100)
		}
		if d.By == ByShare {
			b = fmt.Appendf(b, "\nshare %s → %s", formatShare(share(before, abs64(t.Before(0, typ)))), formatShare(share(after, abs64(t.After(0, typ)))))
		}
		return b
	}
	total := float64(t.Total(0, typ))
	v := float64(t.Total(n, typ))
	b = append(b, formatValue(v, st.Unit)...)
	b = append(b, " ("...)
	b = append(b, formatShare(share(v, total))...)
	b = append(b, " of total)"...)
	if self := t.Self(n, typ); self != 0 && n > 0 {
		b = append(b, ", self "...)
		b = append(b, formatValue(float64(self), st.Unit)...)
	}
	return b
}

// location is "file:line", with how many other lines the frame merges.
func location(f Function, node Node) string {
	loc := f.File
	if loc == "" {
		loc = "?"
	}
	if node.Line > 0 {
		loc += ":" + strconv.FormatInt(node.Line, 10)
	}
	if node.Lines > 1 {
		loc += fmt.Sprintf(" (+%d lines)", node.Lines-1)
	}
	return loc
}

func signed(v float64, unit string) string {
	if v >= 0 {
		return "+" + formatValue(v, unit)
	}
	return formatValue(v, unit)
}

func abs64(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// fitLabel shortens a label to what fits in wpx pixels of the monospace
// font, ".." marking the cut; too narrow frames get no label.
func fitLabel(s string, wpx float64) string {
	n := int((wpx - 6) / (svgFontSize * 0.6))
	if n < 3 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-2]) + ".."
}

// svgLayout is where frames go, as fractions of the drawing's width.
type svgLayout struct {
	x, w     []float64
	order    []int // the nodes drawn, depth first
	maxDepth int
}

// layout places the nodes of t for sample type typ: each child after its
// previous siblings, from its parent's left edge; nodes narrower than
// minWidth pixels (and their descendants) are left out, as are nodes of
// value ≤ 0.
func layout(t *Tree, typ int, drawW, minWidth float64) svgLayout {
	l := svgLayout{x: make([]float64, len(t.Nodes)), w: make([]float64, len(t.Nodes))}
	if len(t.Nodes) == 0 {
		return l
	}
	root := float64(t.Total(0, typ))
	next := make([]float64, len(t.Nodes)) // next child's x, per parent
	l.w[0] = 1
	l.order = append(l.order, 0)
	if root <= 0 {
		return l
	}
	for n := 1; n < len(t.Nodes); n++ {
		node := t.Nodes[n]
		v := float64(t.Total(n, typ))
		w := v / root
		p := node.Parent
		if v <= 0 || w*drawW < minWidth {
			if v > 0 {
				next[p] += w
			}
			n = int(node.End) - 1
			continue
		}
		l.x[n] = l.x[p] + next[p]
		l.w[n] = w
		next[p] += w
		l.order = append(l.order, n)
		l.maxDepth = max(l.maxDepth, int(node.Depth))
	}
	return l
}

// esc escapes text for XML content and attributes, newlines kept as
// character references.
func esc(s string) string { return string(appendEsc(nil, s)) }

// appendEsc appends s escaped for XML content and attributes; characters
// XML 1.0 cannot hold become U+FFFD.
func appendEsc(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '&':
				b = append(b, "&amp;"...)
			case c == '<':
				b = append(b, "&lt;"...)
			case c == '>':
				b = append(b, "&gt;"...)
			case c == '"':
				b = append(b, "&quot;"...)
			case c == '\'':
				b = append(b, "&#39;"...)
			case c == '\n':
				b = append(b, "&#10;"...)
			case c == '\t' || c == '\r' || c >= 0x20:
				b = append(b, c)
			default:
				b = append(b, "\uFFFD"...)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || !xmlChar(r) {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return b
}

func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}
