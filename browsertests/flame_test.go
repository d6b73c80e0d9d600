package browsertests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/net/html"

	"github.com/heapscope/heapscope/internal/flame"
	"github.com/heapscope/heapscope/internal/pprofx"
)

// The profiles of the flame package's tests, written by a real runtime.
const (
	heapBefore = "../internal/flame/testdata/heap-before.pb.gz"
	heapAfter  = "../internal/flame/testdata/heap-after.pb.gz"
)

func loadTree(t *testing.T, path string, opts flame.Options) *flame.Tree {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := pprofx.ReadStacks(f, pprofx.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tree, err := flame.Build(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// zoomTarget picks the frame to click: the widest below the root whose
// value is all in its children (no self, nothing pruned), with at least two
// children, so that zoomed in its children fill the whole width.
func zoomTarget(t *testing.T, tree *flame.Tree, typ int) int {
	t.Helper()
	best := -1
	for n := 1; n < len(tree.Nodes); n++ {
		if tree.Self(n, typ) != 0 || tree.Elided(n, typ) != 0 || tree.Total(n, typ) <= 0 {
			continue
		}
		children := 0
		for c := range tree.Children(n) {
			if tree.Total(c, typ) > 0 {
				children++
			}
		}
		if children >= 2 && (best < 0 || tree.Total(n, typ) > tree.Total(best, typ)) {
			best = n
		}
	}
	if best < 0 {
		t.Fatal("no frame with two children and no self value to zoom into")
	}
	return best
}

// matchedShare is the share of the root a search matches, counting a match
// inside another once, as the pages compute it.
func matchedShare(tree *flame.Tree, typ int, re *regexp.Regexp) float64 {
	var sum int64
	for n := 1; n < len(tree.Nodes); n++ {
		if re.MatchString(tree.Name(n)) {
			sum += max(tree.Total(n, typ), 0)
			n = int(tree.Nodes[n].End) - 1
		}
	}
	return float64(sum) / float64(tree.Total(0, typ))
}

func writeFile(t *testing.T, name string, write func(*bytes.Buffer) error) string {
	t.Helper()
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// widgetFrame is a frame as the HTML widget reports it.
type widgetFrame struct {
	Index  int     `json:"index"`
	Name   string  `json:"name"`
	Depth  int     `json:"depth"`
	Parent int     `json:"parent"`
	X      float64 `json:"x"`
	Width  float64 `json:"width"`
	Y      float64 `json:"y"`
	Height float64 `json:"height"`
}

type widgetState struct {
	View         string  `json:"view"`
	Type         string  `json:"type"`
	Zoom         int     `json:"zoom"`
	ZoomName     string  `json:"zoomName"`
	Icicle       bool    `json:"icicle"`
	MatchedShare float64 `json:"matchedShare"`
	Width        float64 `json:"width"`
}

func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func TestHTML_ZoomSearchAndSwitch(t *testing.T) {
	tree := loadTree(t, heapBefore, flame.Options{Sample: "alloc_space", AllTypes: true})
	typ := tree.Default
	page := writeFile(t, "heap.html", func(b *bytes.Buffer) error {
		return flame.WriteHTML(b, "heap-before", flame.HTMLWidget{ID: "heap", Views: []flame.HTMLView{{Name: "profile", Tree: tree}}})
	})
	ctx := newBrowser(t)
	do(t, ctx,
		chromedp.Navigate(fileURL(t, page)),
		chromedp.Poll[chromedp.Void](`window.heapscopeFlame && window.heapscopeFlame.heap`, chromedp.WithPollingTimeout(20*time.Second)),
	)
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll(".hsflame-error").length`)); n != 0 {
		t.Fatal("the widget reports an error")
	}
	state := func() widgetState { return run(t, ctx, chromedp.Evaluate[widgetState](`heapscopeFlame.heap.state()`)) }
	frames := func() []widgetFrame {
		return run(t, ctx, chromedp.Evaluate[[]widgetFrame](`heapscopeFlame.heap.frames()`))
	}
	if s := state(); s.Type != "alloc_space" || s.Zoom != 0 || s.Width < 600 {
		t.Fatalf("initial state %+v, want alloc_space unzoomed across the page", s)
	}

	// Click the frame; its children then span the full width.
	target := zoomTarget(t, tree, typ)
	var f widgetFrame
	for _, fr := range frames() {
		if fr.Index == target {
			f = fr
		}
	}
	if f.Name != tree.Name(target) {
		t.Fatalf("frame %d is not drawn (frames hold %q)", target, f.Name)
	}
	pt := run(t, ctx, chromedp.Evaluate[[2]float64](fmt.Sprintf(`(() => {
		const c = heapscopeFlame.heap.canvas;
		window.scrollTo(0, Math.max(0, c.getBoundingClientRect().top + window.scrollY + %f - 300));
		const r = c.getBoundingClientRect();
		return [r.left + %f, r.top + %f];
	})()`, f.Y, f.X+f.Width/2, f.Y+f.Height/2)))
	do(t, ctx, chromedp.MouseClickXY(pt[0], pt[1]))
	s := state()
	if s.Zoom != target {
		t.Fatalf("after the click the zoom is on %d (%s), want %d (%s)", s.Zoom, s.ZoomName, target, f.Name)
	}
	var children []widgetFrame
	for _, fr := range frames() {
		if fr.Parent == target {
			children = append(children, fr)
		}
	}
	if len(children) < 2 {
		t.Fatalf("zoomed view shows %d children of %s, want its children", len(children), f.Name)
	}
	left, right, sum := math.Inf(1), math.Inf(-1), 0.0
	for _, c := range children {
		left, right, sum = math.Min(left, c.X), math.Max(right, c.X+c.Width), sum+c.Width
	}
	if left > 0.5 || right < s.Width-0.5 || math.Abs(sum-s.Width) > 0.5 {
		t.Errorf("children of %s span [%.1f, %.1f] (widths sum to %.1f), want the full width %.1f", f.Name, left, right, sum, s.Width)
	}

	// Type in the search box: the matched share is the tree's.
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(".hsflame-search"), "json"))
	want := matchedShare(tree, typ, regexp.MustCompile(`(?i)json`))
	if want <= 0 {
		t.Fatal("nothing matches json in the profile")
	}
	if got := state().MatchedShare; math.Abs(got-want) > 1e-9 {
		t.Errorf("matched share %v, want %v", got, want)
	}
	text := run(t, ctx, chromedp.Evaluate[string](`document.querySelector(".hsflame-matched").textContent`))
	if wantText := fmt.Sprintf("Matched: %.2f%%", want*100); !strings.HasPrefix(text, wantText) {
		t.Errorf("matched text %q, want it to start %q", text, wantText)
	}
	screenshot(t, ctx, "flame-html-zoomed-search.png")

	// Reset, flip to icicle, switch the sample type.
	do(t, ctx, chromedp.Click(chromedp.CSS(".hsflame-reset")), chromedp.Click(chromedp.CSS(".hsflame-orient")))
	if s := state(); s.Zoom != 0 || !s.Icicle {
		t.Errorf("after reset and toggle: %+v, want unzoomed icicle", s)
	}
	if root := frames()[0]; root.Index != 0 || root.Y != 0 {
		t.Errorf("icicle root at y=%v, want on top", root.Y)
	}
	run(t, ctx, chromedp.Evaluate[chromedp.Void](`(() => {
		const sel = document.querySelector(".hsflame-type");
		sel.value = [...sel.options].find(o => o.textContent === "inuse_space").value;
		sel.dispatchEvent(new Event("change"));
	})()`))
	inuse, _ := tree.TypeIndex("inuse_space")
	if s := state(); s.Type != "inuse_space" || math.Abs(s.MatchedShare-matchedShare(tree, inuse, regexp.MustCompile(`(?i)json`))) > 1e-9 {
		t.Errorf("after the switch: %+v, want inuse_space with its own matched share", s)
	}
	screenshot(t, ctx, "flame-html-icicle-inuse.png")
}

func TestHTML_DifferentialViews(t *testing.T) {
	opts := flame.Options{AllTypes: true}
	before, after := loadTree(t, heapBefore, opts), loadTree(t, heapAfter, opts)
	changes, err := flame.Diff(before, after, flame.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vanished, err := flame.Vanished(before, after, flame.DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	page := writeFile(t, "diff.html", func(b *bytes.Buffer) error {
		return flame.WriteHTML(b, "diff", flame.HTMLWidget{ID: "diff", Views: []flame.HTMLView{{Name: "changes", Tree: changes}, {Name: "vanished", Tree: vanished}}})
	})
	ctx := newBrowser(t)
	do(t, ctx,
		chromedp.Navigate(fileURL(t, page)),
		chromedp.Poll[chromedp.Void](`window.heapscopeFlame && window.heapscopeFlame.diff`, chromedp.WithPollingTimeout(20*time.Second)),
	)
	run(t, ctx, chromedp.Evaluate[chromedp.Void](`(() => {
		const sel = document.querySelector(".hsflame-view");
		sel.value = "1";
		sel.dispatchEvent(new Event("change"));
	})()`))
	s := run(t, ctx, chromedp.Evaluate[widgetState](`heapscopeFlame.diff.state()`))
	if s.View != "vanished" {
		t.Errorf("view %q after the switch, want vanished", s.View)
	}
	// The vanished view draws the frames of fmt.Sprintf, gone from after.
	names := run(t, ctx, chromedp.Evaluate[[]string](`heapscopeFlame.diff.frames().map(f => f.name)`))
	if !strings.Contains(strings.Join(names, "\n"), "fmt.Sprintf") {
		t.Error("the vanished view lacks the fmt.Sprintf frames the new profile lost")
	}
	screenshot(t, ctx, "flame-html-vanished.png")
}

// svgFrame is a frame of the SVG as the test reads it from the page.
type svgFrame struct {
	I    int     `json:"i"`
	Name string  `json:"name"`
	D    int     `json:"d"`
	X    float64 `json:"x"`
	W    float64 `json:"w"`
}

const readSVGFrames = `[...document.querySelectorAll("g.f")].map((g, i) => ({
	i, name: g.getAttribute("data-n"), d: +g.getAttribute("data-d"),
	x: +g.getAttribute("data-x"), w: +g.getAttribute("data-w")}))`

// svgRects returns the drawn rectangles of the frames with these indices:
// x and width in the SVG's pixels, and whether each is shown.
func svgRects(t *testing.T, ctx context.Context, idx []int) [][3]float64 {
	t.Helper()
	js, _ := json.Marshal(idx)
	return run(t, ctx, chromedp.Evaluate[[][3]float64](fmt.Sprintf(`(() => {
		const gs = document.querySelectorAll("g.f");
		return %s.map(i => {
			const r = gs[i].querySelector("rect");
			return [+r.getAttribute("x"), +r.getAttribute("width"), gs[i].style.display === "none" ? 0 : 1];
		});
	})()`, js)))
}

func TestSVG_ZoomAndSearch(t *testing.T) {
	tree := loadTree(t, heapBefore, flame.Options{Sample: "alloc_space"})
	path := writeFile(t, "heap.svg", func(b *bytes.Buffer) error {
		return flame.WriteSVG(b, tree, flame.SVGOptions{Subtitle: "heap-before"})
	})
	ctx := newBrowser(t)
	do(t, ctx, chromedp.Navigate(fileURL(t, path)))
	frames := run(t, ctx, chromedp.Evaluate[[]svgFrame](readSVGFrames))
	if len(frames) < 20 {
		t.Fatalf("%d frames in the SVG", len(frames))
	}

	// The widest frame whose children fill it.
	target, targetChildren := -1, []int(nil)
	for _, f := range frames {
		if f.D == 0 {
			continue
		}
		var kids []int
		sum := 0.0
		for _, c := range frames {
			if c.D == f.D+1 && c.X >= f.X-1e-9 && c.X+c.W <= f.X+f.W+1e-9 {
				kids = append(kids, c.I)
				sum += c.W
			}
		}
		if len(kids) >= 2 && math.Abs(sum-f.W) < 1e-6 && (target < 0 || f.W > frames[target].W) {
			target, targetChildren = f.I, kids
		}
	}
	if target < 0 {
		t.Fatal("no frame whose children fill it")
	}
	pt := run(t, ctx, chromedp.Evaluate[[2]float64](fmt.Sprintf(`(() => {
		const r = document.querySelectorAll("g.f")[%d].querySelector("rect");
		r.scrollIntoView({block: "center"});
		const b = r.getBoundingClientRect();
		return [b.left + b.width / 2, b.top + b.height / 2];
	})()`, target)))
	do(t, ctx, chromedp.MouseClickXY(pt[0], pt[1]))

	const pad, full = 10.0, 1180.0
	zoomed := svgRects(t, ctx, []int{target})[0]
	if zoomed[2] == 0 || math.Abs(zoomed[0]-pad) > 0.01 || math.Abs(zoomed[1]-full) > 0.01 {
		t.Fatalf("clicked frame %s drawn at x=%v width=%v, want the full width", frames[target].Name, zoomed[0], zoomed[1])
	}
	left, right, sum := math.Inf(1), math.Inf(-1), 0.0
	for _, r := range svgRects(t, ctx, targetChildren) {
		if r[2] == 0 {
			t.Fatal("a child of the zoomed frame is hidden")
		}
		left, right, sum = math.Min(left, r[0]), math.Max(right, r[0]+r[1]), sum+r[1]
	}
	if math.Abs(left-pad) > 0.02 || math.Abs(right-(pad+full)) > 0.02 || math.Abs(sum-full) > 0.05 {
		t.Errorf("children of %s span [%.2f, %.2f] (widths sum to %.2f), want [%v, %v]", frames[target].Name, left, right, sum, pad, pad+full)
	}
	reset := run(t, ctx, chromedp.Evaluate[string](`document.getElementById("reset").getAttribute("class")`))
	if strings.Contains(reset, "hidden") {
		t.Error("Reset Zoom is hidden while zoomed")
	}

	// Search: the share shown is the tree's, up to frames too thin to draw.
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#search"), "json"))
	want := matchedShare(tree, 0, regexp.MustCompile(`(?i)json`))
	got := run(t, ctx, chromedp.Evaluate[float64](`+document.getElementById("matched").getAttribute("data-share")`))
	if want <= 0 || math.Abs(got-want) > 0.001 {
		t.Errorf("matched share %v, want %v", got, want)
	}
	text := run(t, ctx, chromedp.Evaluate[string](`document.getElementById("matched").textContent`))
	if !strings.HasPrefix(text, "Matched: ") {
		t.Errorf("matched text %q", text)
	}
	highlighted := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("g.f.match").length`))
	if highlighted == 0 {
		t.Error("no frame highlighted")
	}
	screenshot(t, ctx, "flame-svg-zoomed-search.png")

	// Back: Reset Zoom restores the frame's width.
	do(t, ctx, chromedp.Click(chromedp.CSS("#reset")))
	back := svgRects(t, ctx, []int{target})[0]
	if math.Abs(back[1]-frames[target].W*full) > 0.01 {
		t.Errorf("after reset the frame is %v wide, want %v", back[1], frames[target].W*full)
	}
}

// TestHTML_Parses checks the page with an HTML5 parser: one title, the
// widget's container and data, and nothing fetched from elsewhere.
func TestHTML_Parses(t *testing.T) {
	tree := loadTree(t, heapBefore, flame.Options{AllTypes: true})
	var buf bytes.Buffer
	if err := flame.WriteHTML(&buf, "parse <me>", flame.HTMLWidget{ID: "p", Views: []flame.HTMLView{{Name: "profile", Tree: tree}}}); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var titles, widgets, data, scripts, styles int
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			attr := map[string]string{}
			for _, a := range n.Attr {
				attr[a.Key] = a.Val
				if a.Key == "src" || a.Key == "href" {
					t.Errorf("<%s %s=%q>: the page must make no external request", n.Data, a.Key, a.Val)
				}
			}
			switch {
			case n.Data == "title":
				titles++
				if n.FirstChild == nil || n.FirstChild.Data != "parse <me>" {
					t.Errorf("title %v, want the escaped title read back", n.FirstChild)
				}
			case n.Data == "div" && attr["class"] == "hsflame":
				widgets++
			case n.Data == "script" && attr["type"] == "application/json":
				data++
				var v map[string]any
				if n.FirstChild == nil || json.Unmarshal([]byte(n.FirstChild.Data), &v) != nil {
					t.Error("widget data does not parse as JSON")
				}
			case n.Data == "script":
				scripts++
			case n.Data == "style":
				styles++
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if titles != 1 || widgets != 1 || data != 1 || scripts != 1 || styles < 1 {
		t.Errorf("page has %d titles, %d widgets, %d data, %d scripts, %d styles; want 1, 1, 1, 1, ≥1", titles, widgets, data, scripts, styles)
	}
}
