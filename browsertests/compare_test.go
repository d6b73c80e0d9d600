package browsertests

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/flame"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/rundir"
)

// compareWidget is the id heapscope compare gives the page's flame graph.
const compareWidget = "allocs-diff"

// readSide reads run directories as heapscope compare does.
func readSide(t *testing.T, dirs ...string) compare.Side {
	t.Helper()
	side := compare.Side{Label: dirs[0]}
	for _, dir := range dirs {
		stored, warnings, err := rundir.ReadStored(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(warnings) > 0 {
			t.Errorf("read %s: warnings %v", dir, warnings)
		}
		for _, s := range stored {
			side.Samples = append(side.Samples, compare.Sample{Label: s.Dir, Run: s.Run, Allocs: s.Allocs})
		}
	}
	return side
}

// writeComparePage renders compare.html of two run directories as
// heapscope compare -o compare.html does, and returns the comparison, the
// flame graph's views and the page's path.
func writeComparePage(t *testing.T, beforeDir, afterDir string) (*compare.Comparison, []flame.HTMLView, string) {
	t.Helper()
	before, after := readSide(t, beforeDir), readSide(t, afterDir)
	c, err := compare.Compare(before, after, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	widget, err := compare.Flame(before, after, c)
	if err != nil {
		t.Fatal(err)
	}
	if widget == nil || widget.ID != compareWidget || len(widget.Views) != 2 {
		t.Fatalf("compare.Flame gave %+v, want the %s widget with the changes and vanished views", widget, compareWidget)
	}
	views := widget.Views
	page := writeFile(t, "compare.html", func(b *bytes.Buffer) error {
		return report.Write(b, report.FormatHTML, report.Comparison{Comparison: c, Flame: widget})
	})
	return c, views, page
}

// figureRow is a row of the page's headline table.
type figureRow struct {
	Figure string   `json:"figure"`
	Cells  []string `json:"cells"`
}

// perUnitValues reads the byte values per unit a text states, such as
// "1.5 KiB/request", in bytes.
func perUnitValues(text, unit string) []float64 {
	scale := map[string]float64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
	var out []float64
	for _, m := range regexp.MustCompile(`(-?[0-9.,]+) (B|KiB|MiB|GiB)/`+regexp.QuoteMeta(unit)).FindAllStringSubmatch(text, -1) {
		v, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
		if err == nil {
			out = append(out, v*scale[m[2]])
		}
	}
	return out
}

// near reports whether a value shown with three significant digits reads
// as want.
func near(got, want float64) bool {
	return math.Abs(got-want) <= 0.006*math.Abs(want)+0.5
}

// matchedValue is the value of the frames a search matches, nested matches
// counted once, as value gives it per node.
func matchedValue(tree *flame.Tree, typ int, re *regexp.Regexp, value func(n, typ int) float64) float64 {
	var sum float64
	for n := 1; n < len(tree.Nodes); n++ {
		if re.MatchString(tree.Name(n)) {
			if tree.Total(n, typ) > 0 {
				sum += value(n, typ)
			}
			n = int(tree.Nodes[n].End) - 1
		}
	}
	return sum
}

// canvasPixel is the colour drawn at a point of the widget's canvas, in
// CSS pixels.
func canvasPixel(t *testing.T, ctx context.Context, x, y float64) [3]int {
	t.Helper()
	return run(t, ctx, chromedp.Evaluate[[3]int](fmt.Sprintf(`(() => {
		const c = heapscopeFlame[%q].canvas, d = window.devicePixelRatio || 1;
		const p = c.getContext("2d").getImageData(Math.floor(%f * d), Math.floor(%f * d), 1, 1).data;
		return [p[0], p[1], p[2]];
	})()`, compareWidget, x, y)))
}

func TestCompare_TablesAndDifferentialFlameGraph(t *testing.T) {
	// Chromium takes seconds to start on a busy machine: meanwhile, the
	// two runs.
	ctx, started := startBrowser(t)
	_, leaky := profileExample(t, "leaky")
	_, optimized := profileExample(t, "optimized")
	c, views, page := writeComparePage(t, leaky, optimized)
	if err := <-started; err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	w := watch(t, ctx)
	do(t, ctx,
		chromedp.Navigate(fileURL(t, page)),
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`window.heapscopeFlame && window.heapscopeFlame[%q]`, compareWidget), chromedp.WithPollingTimeout(20*time.Second)),
	)
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll(".hsflame-error").length`)); n != 0 {
		t.Fatal("the flame graph reports an error")
	}
	widget := fmt.Sprintf("heapscopeFlame[%q]", compareWidget)
	state := func() widgetState {
		t.Helper()
		return run(t, ctx, chromedp.Evaluate[widgetState](widget+`.state()`))
	}
	frames := func() []widgetFrame {
		t.Helper()
		return run(t, ctx, chromedp.Evaluate[[]widgetFrame](widget+`.frames()`))
	}

	t.Run("headline table", func(t *testing.T) {
		rows := run(t, ctx, chromedp.Evaluate[[]figureRow](`[...document.querySelectorAll("#figures tbody tr")].map(tr => ({
			figure: tr.dataset.figure, cells: [...tr.cells].map(td => td.textContent)}))`))
		var want []compare.FigureChange
		for _, f := range c.Figures {
			if f.Before != nil || f.After != nil {
				want = append(want, f)
			}
		}
		if len(rows) != len(want) || len(rows) < 8 {
			t.Fatalf("the table has %d rows, want the %d figures the runs have (at least 8)", len(rows), len(want))
		}
		shown := func(s *compare.Stat, unit string) string {
			if s == nil {
				return "—"
			}
			return report.FigureValue(s.Median, unit)
		}
		compared := 0
		for i, f := range want {
			r := rows[i]
			if r.Figure != f.Name || len(r.Cells) < 5 {
				t.Errorf("row %d is %s with %d cells, want %s with name, before, after, delta and relative", i, r.Figure, len(r.Cells), f.Name)
				continue
			}
			if r.Cells[0] != f.Label || r.Cells[1] != shown(f.Before, f.Unit) || r.Cells[2] != shown(f.After, f.Unit) {
				t.Errorf("%s: row %q, want %q, %q before, %q after", f.Name, r.Cells[:3], f.Label, shown(f.Before, f.Unit), shown(f.After, f.Unit))
			}
			if !f.Compared() {
				continue
			}
			compared++
			if delta := r.Cells[3]; delta == "" || strings.HasPrefix(delta, "-") != (f.Delta < 0) {
				t.Errorf("%s: delta %q, want the sign of %v", f.Name, delta, f.Delta)
			}
			if f.Relative != nil && !strings.HasSuffix(r.Cells[4], "%") {
				t.Errorf("%s: relative delta %q, want a percentage", f.Name, r.Cells[4])
			}
		}
		if compared < 8 {
			t.Errorf("%d figures have both sides, want the load, heap and GC figures (8 or more)", compared)
		}
		// The leaky cache's Process allocates on every request; the
		// optimized one lives in another package.
		shrank := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#sites-shrank td.fn")].map(td => td.title)`))
		if !strings.Contains(strings.Join(shrank, "\n"), "leakycache.(*Worker).Process") {
			t.Errorf("the sites that shrank, %q, lack leakycache's Process", shrank)
		}
	})

	s := state()
	t.Run("flame graph drawn", func(t *testing.T) {
		if s.View != "changes" || s.Type != "alloc_space" || s.Zoom != 0 || s.Width < 600 {
			t.Errorf("initial state %+v, want the changes view of alloc_space, unzoomed across the page", s)
		}
		size := run(t, ctx, chromedp.Evaluate[[2]float64](`(r => [r.width, r.height])(`+widget+`.canvas.getBoundingClientRect())`))
		if size[0] < 600 || size[1] < 5*18 {
			t.Errorf("canvas is %.0f×%.0f, want the page's width and several rows", size[0], size[1])
		}
		fs := frames()
		names := make([]string, len(fs))
		for i, f := range fs {
			names[i] = f.Name
		}
		if len(fs) < 10 || !strings.Contains(strings.Join(names, "\n"), "/optimizedcache.") {
			t.Errorf("%d frames drawn (%q), want the after runs' stacks through optimizedcache", len(fs), names)
		}
		// The legend's totals are per request, as the graph's title and
		// its tooltips are: the root's before and after values.
		tree := views[0].Tree
		typ, err := tree.TypeIndex("alloc_space")
		if err != nil {
			t.Fatal(err)
		}
		legend := run(t, ctx, chromedp.Evaluate[string](`document.querySelector(".hsflame-legend").textContent`))
		got := perUnitValues(legend, c.PerUnit)
		if want := [2]float64{tree.Before(0, typ), tree.After(0, typ)}; len(got) != 2 || !near(got[0], want[0]) || !near(got[1], want[1]) {
			t.Errorf("legend %q gives %v per %s, want before and after %v", legend, got, c.PerUnit, want)
		}
		// The root, "all", fills the bottom row with a colour of the
		// differential palette, not the background.
		root := fs[0]
		if px := canvasPixel(t, ctx, root.X+root.Width/2, root.Y+1); px == [3]int{0, 0, 0} || px == [3]int{255, 255, 255} {
			t.Errorf("the root frame is drawn as %v", px)
		}
	})

	t.Run("click zooms", func(t *testing.T) {
		// The widest frame that is not already full width, wide enough
		// to click.
		var target widgetFrame
		for _, f := range frames() {
			if f.Depth > 0 && f.Width < s.Width-2 && f.Width > 30 && f.Width > target.Width {
				target = f
			}
		}
		if target.Width == 0 {
			t.Fatal("no frame narrower than the page to click")
		}
		pt := run(t, ctx, chromedp.Evaluate[[2]float64](fmt.Sprintf(`(() => {
			const c = %s.canvas;
			window.scrollTo(0, Math.max(0, c.getBoundingClientRect().top + window.scrollY + %f - 300));
			const r = c.getBoundingClientRect();
			return [r.left + %f, r.top + %f];
		})()`, widget, target.Y, target.X+target.Width/2, target.Y+target.Height/2)))
		do(t, ctx, chromedp.MouseClickXY(pt[0], pt[1]))
		z := state()
		if z.Zoom != target.Index {
			t.Fatalf("after clicking %s (%d) the zoom is on %s (%d)", target.Name, target.Index, z.ZoomName, z.Zoom)
		}
		for _, f := range frames() {
			switch {
			case f.Index == target.Index || f.Depth < target.Depth:
				if math.Abs(f.X) > 0.01 || math.Abs(f.Width-z.Width) > 0.01 {
					t.Errorf("%s (depth %d) spans [%.1f, %.1f], want the full width %.1f", f.Name, f.Depth, f.X, f.X+f.Width, z.Width)
				}
			case f.X < -0.01 || f.X+f.Width > z.Width+0.01:
				t.Errorf("%s spans [%.1f, %.1f], outside the zoomed width %.1f", f.Name, f.X, f.X+f.Width, z.Width)
			}
		}
		do(t, ctx, chromedp.Click(chromedp.CSS(".hsflame-reset")))
		if z := state(); z.Zoom != 0 {
			t.Errorf("after Reset zoom the zoom is on %s", z.ZoomName)
		}
	})

	t.Run("search highlights", func(t *testing.T) {
		const term = "optimizedcache"
		do(t, ctx, chromedp.SendKeys(chromedp.CSS(".hsflame-search"), term))
		tree := views[0].Tree
		typ, err := tree.TypeIndex("alloc_space")
		if err != nil {
			t.Fatal(err)
		}
		want := matchedShare(tree, typ, regexp.MustCompile("(?i)"+term))
		if got := state().MatchedShare; want <= 0 || math.Abs(got-want) > 1e-9 {
			t.Errorf("matched share %v, want %v", got, want)
		}
		// The matched value is per request too: the after runs' values
		// of the matching frames, nested ones counted once.
		wantValue := matchedValue(tree, typ, regexp.MustCompile("(?i)"+term), tree.After)
		text := run(t, ctx, chromedp.Evaluate[string](`document.querySelector(".hsflame-matched").textContent`))
		if v := perUnitValues(text, c.PerUnit); !strings.HasPrefix(text, fmt.Sprintf("Matched: %.2f%%", want*100)) || len(v) != 1 || !near(v[0], wantValue) {
			t.Errorf("matched text %q, want %.2f%% and %.0f B/%s", text, want*100, wantValue, c.PerUnit)
		}
		magenta := [3]int{230, 0, 230}
		highlighted := 0
		for _, f := range frames() {
			if f.Width < 4 {
				continue
			}
			px := canvasPixel(t, ctx, f.X+f.Width/2, f.Y+1)
			if matches := strings.Contains(strings.ToLower(f.Name), term); matches != (px == magenta) {
				t.Errorf("%s is drawn %v: matches the search %v", f.Name, px, matches)
			} else if matches {
				highlighted++
			}
		}
		if highlighted == 0 {
			t.Error("no frame highlighted")
		}
		screenshot(t, ctx, "compare-search.png")
	})

	t.Run("vanished view", func(t *testing.T) {
		run(t, ctx, chromedp.Evaluate[chromedp.Void](`(() => {
			const sel = document.querySelector(".hsflame-view");
			sel.value = [...sel.options].find(o => o.textContent === "vanished").value;
			sel.dispatchEvent(new Event("change"));
		})()`))
		if v := state(); v.View != "vanished" || v.Zoom != 0 || v.MatchedShare != 0 {
			t.Errorf("after the switch: %+v, want the vanished view unzoomed, the search matching nothing", v)
		}
		// The leaky cache's frames are gone from after: drawn here at
		// their old width, coloured as shrunk (blue).
		var process widgetFrame
		for _, f := range frames() {
			if strings.HasSuffix(f.Name, "leakycache.(*Worker).Process") && f.Width > process.Width {
				process = f
			}
		}
		if process.Width < 4 {
			t.Fatal("the vanished view lacks leakycache's Process, gone from after")
		}
		if px := canvasPixel(t, ctx, process.X+process.Width/2, process.Y+1); px[2] <= px[0]+60 {
			t.Errorf("leakycache's Process is drawn %v, want the blue of a shrunk frame", px)
		}

		// A search there states the before runs' values, per request.
		const term = "leakycache"
		run(t, ctx, chromedp.Evaluate[chromedp.Void](`(() => {
			const input = document.querySelector(".hsflame-search");
			input.value = "";
			input.dispatchEvent(new Event("input"));
		})()`))
		do(t, ctx, chromedp.SendKeys(chromedp.CSS(".hsflame-search"), term))
		tree := views[1].Tree
		typ, err := tree.TypeIndex("alloc_space")
		if err != nil {
			t.Fatal(err)
		}
		want := matchedValue(tree, typ, regexp.MustCompile("(?i)"+term), tree.Before)
		text := run(t, ctx, chromedp.Evaluate[string](`document.querySelector(".hsflame-matched").textContent`))
		if v := perUnitValues(text, c.PerUnit); want <= 0 || len(v) != 1 || !near(v[0], want) {
			t.Errorf("matched text %q, want %.0f B/%s", text, want, c.PerUnit)
		}
		screenshot(t, ctx, "compare-vanished.png")
	})

	w.check(t, "file://")
}
