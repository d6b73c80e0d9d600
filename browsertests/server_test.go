package browsertests

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/server"
	"github.com/heapscope/heapscope/internal/store"
	watcher "github.com/heapscope/heapscope/internal/watch"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// watchedStore fills a store with three runs of the named example that a
// real watch captured, and serves it.
func watchedStore(t *testing.T, name string) (*httptest.Server, string) {
	t.Helper()
	base, _ := startExample(t, name)
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg, err := config.ForURLs([]string{base}, config.Settings{Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watcher.New(watcher.Options{Config: cfg, Store: st, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := w.Once(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := st.Targets()
	if err != nil || len(keys) != 1 {
		t.Fatalf("targets %v, %v", keys, err)
	}
	s, err := server.New(server.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv, keys[0]
}

// TestServer_TargetsToARangeSelection opens the server's pages as a
// person does — the targets page, a target's timelines — checks that
// what they draw is what the API answers, and drives two range
// selections on a chart into the links to the merged flame graph and to
// the comparison.
func TestServer_TargetsToARangeSelection(t *testing.T) {
	srv, key := watchedStore(t, "leaky")
	var series struct {
		Points []struct {
			Time  time.Time
			Value float64
		}
	}
	resp, err := http.Get(srv.URL + "/api/v1/series?metric=rss&target=" + url.QueryEscape(key))
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&series)
	resp.Body.Close()
	if len(series.Points) != 3 {
		t.Fatalf("the API has %d RSS points, want one of each run", len(series.Points))
	}

	ctx := newBrowser(t)
	w := watch(t, ctx)
	do(t, ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#targets`)))
	type row struct {
		Target, Health, LastRSS string
		SparkPoints             int
		SparkWidth              float64
	}
	rows := run(t, ctx, chromedp.Evaluate[[]row](`[...document.querySelectorAll("#targets tbody tr")].map(tr => ({
		Target: tr.dataset.target,
		Health: tr.querySelector(".health").textContent,
		LastRSS: tr.querySelector('.last[data-metric="rss"]').textContent,
		SparkPoints: tr.querySelector(".spark polyline").getAttribute("points").trim().split(/\s+/).length,
		SparkWidth: tr.querySelector(".spark svg").getBoundingClientRect().width,
	}))`))
	if len(rows) != 1 || rows[0].Target != key || rows[0].Health != "ok" || rows[0].SparkPoints != 3 || rows[0].SparkWidth < 100 {
		t.Fatalf("targets page rows %+v: want %s, healthy, its sparkline drawn through the 3 runs", rows, key)
	}
	if want := humanize.Bytes(series.Points[2].Value); rows[0].LastRSS != want {
		t.Errorf("the targets page says the last RSS is %s, the API %s", rows[0].LastRSS, want)
	}
	screenshot(t, ctx, "server-targets.png")

	do(t, ctx, chromedp.Click(chromedp.CSS(`#targets tbody tr td a`)), chromedp.WaitVisible(chromedp.CSS(`figure.timeline svg`)))
	screenshot(t, ctx, "server-target.png")
	// The range of the runs, a second either side: the selections below
	// hold runs to merge and compare.
	first, last := series.Points[0].Time.Add(-time.Second), series.Points[2].Time.Add(time.Second)
	do(t, ctx, chromedp.Navigate(srv.URL+"/target?target="+url.QueryEscape(key)+"&from="+first.UTC().Format(time.RFC3339)+"&to="+last.UTC().Format(time.RFC3339)),
		chromedp.WaitVisible(chromedp.CSS(`figure.timeline svg`)))
	type figure struct {
		Metric     string
		Dots       int
		Width      float64
		Top, Left  float64
		PlotLeft   float64
		PlotRight  float64
		ChartWidth float64
	}
	figs := run(t, ctx, chromedp.Evaluate[[]figure](`[...document.querySelectorAll("figure.timeline")].map(f => {
		const r = f.querySelector("svg").getBoundingClientRect();
		return {Metric: f.dataset.metric, Dots: f.querySelectorAll("svg circle").length, Width: r.width,
			Top: r.top + window.scrollY, Left: r.left, PlotLeft: Number(f.dataset.left), PlotRight: Number(f.dataset.right), ChartWidth: Number(f.dataset.width)};
	})`))
	if len(figs) != 4 || figs[0].Metric != "rss" {
		t.Fatalf("target page figures %+v: want four timelines, RSS first", figs)
	}
	if figs[0].Dots != len(series.Points) || figs[0].Width < 600 {
		t.Errorf("the RSS timeline draws %d dots %.0f px wide: want the API's %d points", figs[0].Dots, figs[0].Width, len(series.Points))
	}
	// Where the dots are: the runs' times on the axis, to select around them.
	pos := run(t, ctx, chromedp.Evaluate[[]float64](`(() => {
		const f = document.querySelector("figure.timeline");
		const l = Number(f.dataset.left), r = Number(f.dataset.right);
		return [...f.querySelectorAll("svg circle")].map(c => (Number(c.getAttribute("cx")) - l) / (r - l));
	})()`))
	if len(pos) != 3 {
		t.Fatalf("dots at %v", pos)
	}

	// Drag across the first half of the RSS chart's plot, then shift-drag
	// across the second half.
	f := figs[0]
	scale := f.Width / f.ChartWidth
	x := func(frac float64) float64 { return f.Left + (f.PlotLeft+frac*(f.PlotRight-f.PlotLeft))*scale }
	// The page leads with the target's problems: bring the chart into
	// the window before pressing on it.
	do(t, ctx, chromedp.ScrollIntoView(chromedp.CSS(`figure.timeline svg`)))
	y := f.Top + 120 - run(t, ctx, chromedp.Evaluate[float64](`window.scrollY`))
	drag := func(from, to float64, mods ...chromedp.Modifier) []chromedp.Action[chromedp.Void] {
		m := chromedp.ButtonModifiers(mods...)
		return []chromedp.Action[chromedp.Void]{
			chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x(from), y, chromedp.ButtonLeft, chromedp.ClickCount(1), m),
			chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x((from+to)/2), y, chromedp.ButtonLeft, m),
			chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x(to), y, chromedp.ButtonLeft, m),
			chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x(to), y, chromedp.ButtonLeft, chromedp.ClickCount(1), m),
		}
	}
	// The first two runs, then the third.
	do(t, ctx, append(drag(pos[0]-0.01, (pos[1]+pos[2])/2), chromedp.WaitVisible(chromedp.CSS(`#selection`)))...)
	flame := run(t, ctx, chromedp.Evaluate[string](`document.getElementById("flame-link").getAttribute("href")`))
	if pl := run(t, ctx, chromedp.Evaluate[string](`document.getElementById("pprof-link").getAttribute("href")`)); pl != strings.Replace(flame, "/flame?", "/merged?", 1) {
		t.Errorf("pprof link %q, want the flame link's range at /merged", pl)
	}
	fu, err := url.Parse(flame)
	if err != nil || fu.Path != "/flame" || fu.Query().Get("target") != key || fu.Query().Get("type") != "heap" {
		t.Fatalf("flame link %q: want /flame of %s's heap", flame, key)
	}
	a0, _ := time.Parse(time.RFC3339Nano, fu.Query().Get("from"))
	a1, _ := time.Parse(time.RFC3339Nano, fu.Query().Get("to"))
	if !a0.Before(a1) {
		t.Errorf("flame link's range %v to %v is empty", a0, a1)
	}
	do(t, ctx, drag((pos[1]+pos[2])/2+0.01, pos[2]+0.01, chromedp.ModifierShift)...)
	compare := run(t, ctx, chromedp.Evaluate[string](`document.getElementById("compare-link").hidden ? "" : document.getElementById("compare-link").getAttribute("href")`))
	cu, err := url.Parse(compare)
	if err != nil || cu.Path != "/compare" || cu.Query().Get("base_from") != fu.Query().Get("from") {
		t.Fatalf("compare link %q: want /compare with the first range as the base", compare)
	}
	b0, _ := time.Parse(time.RFC3339Nano, cu.Query().Get("from"))
	if !b0.After(a1) {
		t.Errorf("second range starts %v, before the first ends %v", b0, a1)
	}
	if !strings.Contains(run(t, ctx, chromedp.Evaluate[string](`document.getElementById("selection").textContent`)), "B: ") {
		t.Error("the selection does not show the second range")
	}
	screenshot(t, ctx, "server-selection.png")

	// The merged flame graph of the first range: two runs' heaps, drawn.
	do(t, ctx, chromedp.Navigate(srv.URL+flame),
		chromedp.Poll[chromedp.Void](`document.querySelector(".hsflame canvas") !== null && document.title.includes("the sum of 2 heap snapshots")`, chromedp.WithPollingTimeout(20*time.Second)))
	canvas := run(t, ctx, chromedp.Evaluate[[]float64](`(() => { const r = document.querySelector(".hsflame canvas").getBoundingClientRect(); return [r.width, r.height]; })()`))
	if canvas[0] < 600 || canvas[1] < 50 {
		t.Errorf("the merged flame graph is %.0f×%.0f", canvas[0], canvas[1])
	}
	screenshot(t, ctx, "server-flame.png")

	// pprof's own UI of the same merge, as the selection links it.
	if pl := run(t, ctx, chromedp.Evaluate[string](`document.getElementById("pprof-link") ? document.getElementById("pprof-link").getAttribute("href") : ""`)); pl != "" {
		t.Errorf("the flame graph page has a pprof link %q: want it on the target page only", pl)
	}
	do(t, ctx, chromedp.Navigate(srv.URL+"/merged?"+fu.RawQuery),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#stack-chart .boxtext").length > 3`, chromedp.WithPollingTimeout(20*time.Second)))
	screenshot(t, ctx, "server-pprof.png")

	// The comparison of the two ranges: its tables name both sides.
	do(t, ctx, chromedp.Navigate(srv.URL+compare))
	sides := run(t, ctx, chromedp.Evaluate[string](`document.body.textContent`))
	if !run(t, ctx, chromedp.Evaluate[bool](`document.getElementById("figures") !== null`)) {
		t.Fatalf("the comparison page has no figures: %.300s", sides)
	}
	if !strings.Contains(sides, "(2 runs)") || !strings.Contains(sides, "Headline figures") {
		t.Errorf("the comparison does not name its sides' runs: %.300s", sides)
	}
	screenshot(t, ctx, "server-compare.png")

	// The findings feed, and a stored run's page from a link of the target page.
	do(t, ctx, chromedp.Navigate(srv.URL+"/findings?min=info"), chromedp.WaitVisible(chromedp.CSS(`#findings`)))
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#findings tbody tr td a").length`)); n == 0 {
		t.Error("the findings feed lists no finding of the watched runs")
	}
	screenshot(t, ctx, "server-findings.png")
	do(t, ctx, chromedp.Navigate(srv.URL+"/target?target="+url.QueryEscape(key)), chromedp.WaitVisible(chromedp.CSS(`#runs`)))
	do(t, ctx, chromedp.Click(chromedp.CSS(`#runs tbody tr td a`)), chromedp.WaitVisible(chromedp.CSS(`#profiles`)))
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#profiles a.pprof").length`)); n < 3 {
		t.Errorf("the run's page offers pprof's UI of %d profiles", n)
	}
	screenshot(t, ctx, "server-run.png")
	w.check(t, srv.URL+"/", "data:")
}
