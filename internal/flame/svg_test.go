package flame

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// svgFrame is a frame element of an SVG flame graph as read back.
type svgFrame struct {
	name, title, fill string
	x, w              float64
	depth             int
}

// parseSVG checks that data is well-formed XML and returns its frames.
func parseSVG(t *testing.T, data []byte) []svgFrame {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	var frames []svgFrame
	var cur *svgFrame
	inTitle := false
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
			}
			attr := map[string]string{}
			for _, a := range el.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch {
			case el.Name.Local == "g" && attr["class"] == "f":
				d, _ := strconv.Atoi(attr["data-d"])
				x, _ := strconv.ParseFloat(attr["data-x"], 64)
				w, _ := strconv.ParseFloat(attr["data-w"], 64)
				frames = append(frames, svgFrame{name: attr["data-n"], x: x, w: w, depth: d})
				cur = &frames[len(frames)-1]
			case el.Name.Local == "title" && cur != nil:
				inTitle = true
			case el.Name.Local == "rect" && cur != nil:
				cur.fill = attr["fill"]
			}
			for _, a := range el.Attr {
				if a.Name.Local == "href" || a.Name.Local == "src" {
					t.Errorf("SVG refers to %s=%q: it must be self-contained", a.Name.Local, a.Value)
				}
			}
		case xml.CharData:
			if inTitle {
				cur.title += string(el)
			}
		case xml.EndElement:
			switch el.Name.Local {
			case "title":
				inTitle = false
			case "g":
				cur = nil
			}
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	return frames
}

func writeSVG(t *testing.T, tree *Tree, opts SVGOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteSVG(&buf, tree, opts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestWriteSVG(t *testing.T) {
	tree := build(t, loadStacks(t, "heap-before.pb.gz"), Options{AllTypes: true, MinShare: 0.0001})
	for _, sample := range []string{"alloc_space", "inuse_objects"} {
		t.Run(sample, func(t *testing.T) {
			data := writeSVG(t, tree, SVGOptions{Sample: sample, Subtitle: "heap-before.pb.gz"})
			frames := parseSVG(t, data)
			typ, _ := tree.TypeIndex(sample)
			drawn := layout(tree, typ, 1180, 0.1)
			if len(frames) != len(drawn.order) || len(frames) < 20 {
				t.Fatalf("%d frames in the SVG, want the %d of the layout", len(frames), len(drawn.order))
			}
			if frames[0].depth != 0 || frames[0].w != 1 {
				t.Errorf("first frame %+v, want the root at full width", frames[0])
			}
			for i, f := range frames[1:] {
				// Frames come in the layout's order.
				n := drawn.order[i+1]
				if f.name != tree.Name(n) || f.depth != int(tree.Nodes[n].Depth) {
					t.Fatalf("frame %d is %s at depth %d, want node %d, %s", i+1, f.name, f.depth, n, tree.Name(n))
				}
				node := tree.Nodes[n]
				fn := tree.Functions[node.Function]
				// Tooltip: full name, file:line, value and share.
				for _, want := range []string{fn.Name, fn.File + ":" + strconv.FormatInt(node.Line, 10), "of total)"} {
					if !strings.Contains(f.title, want) {
						t.Errorf("tooltip of %s lacks %q:\n%s", f.name, want, f.title)
					}
				}
				if f.x < 0 || f.x+f.w > 1+1e-6 {
					t.Errorf("frame %s spans [%v, %v], outside the graph", f.name, f.x, f.x+f.w)
				}
			}
			for _, want := range []string{`id="search"`, `id="matched"`, `id="reset"`, "standard library", "runtime", "application"} {
				if !bytes.Contains(data, []byte(want)) {
					t.Errorf("SVG lacks %s", want)
				}
			}
		})
	}
}

func TestWriteSVG_Layout(t *testing.T) {
	tree := build(t, stacksOf(t, synthetic()), Options{})
	frames := parseSVG(t, writeSVG(t, tree, SVGOptions{}))
	// Children start at their parent's left edge, in name order, with
	// widths by value: main.main (220 of 240) holds the bare location (10),
	// handle (110), lib.Do (60) and rec (40).
	want := map[string][2]float64{
		"main.main":               {0, 220.0 / 240},
		"0x1008":                  {0, 10.0 / 240},
		"github.com/other/lib.Do": {120.0 / 240, 60.0 / 240},
		"main.rec":                {180.0 / 240, 40.0 / 240},
	}
	for _, f := range frames {
		if w, ok := want[f.name]; ok && f.depth <= 2 {
			if abs64(f.x-w[0]) > 1e-7 || abs64(f.w-w[1]) > 1e-7 {
				t.Errorf("%s at [%v +%v], want [%v +%v]", f.name, f.x, f.w, w[0], w[1])
			}
		}
	}
}

func TestWriteSVG_DiffOfSelfIsNeutral(t *testing.T) {
	tree := build(t, loadStacks(t, "heap-before.pb.gz"), Options{})
	d, err := Diff(tree, tree, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	frames := parseSVG(t, writeSVG(t, d, SVGOptions{}))
	for _, f := range frames {
		if f.fill != neutralColour.String() {
			t.Fatalf("frame %s filled %s, want neutral %s", f.name, f.fill, neutralColour)
		}
		if !strings.Contains(f.title, "before") || !strings.Contains(f.title, "after") || !strings.Contains(f.title, ": +0 B") {
			t.Fatalf("diff tooltip lacks before, after and a zero change: %q", f.title)
		}
	}
}

func TestWriteSVG_Diff(t *testing.T) {
	before, after := pair(t)
	d, _ := Diff(before, after, DiffOptions{})
	frames := parseSVG(t, writeSVG(t, d, SVGOptions{}))
	fills := map[string]string{}
	for _, f := range frames {
		fills[f.name] = f.fill
	}
	rgbRe := regexp.MustCompile(`^rgb\((\d+),(\d+),(\d+)\)$`)
	blue := func(s string) (int, int) {
		m := rgbRe.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("fill %q is not rgb()", s)
		}
		r, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[3])
		return r, b
	}
	if r, b := blue(fills["main.audit"]); r <= b {
		t.Errorf("main.audit (new) filled %s, want red", fills["main.audit"])
	}
	if r, b := blue(fills["main.rec"]); r >= b {
		t.Errorf("main.rec (halved) filled %s, want blue", fills["main.rec"])
	}
	if fills["github.com/other/lib.Do"] != neutralColour.String() {
		t.Errorf("lib.Do (unchanged) filled %s, want neutral", fills["github.com/other/lib.Do"])
	}
}

func TestWriteSVG_Escapes(t *testing.T) {
	p := synthetic()
	p.Function[0].Name = `main.<weird>&"name"` + "\x01"
	p.Function[0].Filename = "a&b.go"
	tree := build(t, stacksOf(t, p), Options{})
	frames := parseSVG(t, writeSVG(t, tree, SVGOptions{Title: "<title> & more"}))
	found := false
	for _, f := range frames {
		if strings.HasPrefix(f.name, `main.<weird>&"name"`) {
			found = true
		}
	}
	if !found {
		t.Error("escaped name not read back")
	}
}

func TestWriteSVG_Errors(t *testing.T) {
	tree := build(t, stacksOf(t, synthetic()), Options{})
	if err := WriteSVG(io.Discard, tree, SVGOptions{Sample: "cpu"}); err == nil {
		t.Error("unknown sample type accepted")
	}
	if strings.Contains(svgScript, "]]>") || strings.Contains(svgStyle, "]]>") {
		t.Error("the SVG's script or style would end its CDATA section")
	}
}

func BenchmarkWriteSVG(b *testing.B) {
	tree, err := Build(bigStacks(b, 50000), Options{MinShare: 0.0001})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteSVG(io.Discard, tree, SVGOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
