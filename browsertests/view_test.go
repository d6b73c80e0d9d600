package browsertests

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heapscope/heapscope/internal/view"
)

func TestView_IndexToPprofUI(t *testing.T) {
	_, dir := profileExample(t, "leaky")
	s, err := view.Open(dir, view.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s) // on 127.0.0.1
	defer srv.Close()

	ctx := newBrowser(t)
	w := watch(t, ctx)
	do(t, ctx, chromedp.Navigate(srv.URL+"/"))
	links := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("a.pprof")].map(a => a.getAttribute("href"))`))
	if len(links) != len(s.Profiles()) {
		t.Fatalf("index links to pprof's UI for %d profiles (%v), want %d", len(links), links, len(s.Profiles()))
	}

	// Follow the index's link to pprof's UI for the window's allocations:
	// it lands on pprof's flame graph, drawn by pprof's own script.
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`a.pprof[href="pprof/allocs-delta/"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#stack-chart`)),
		chromedp.Poll[chromedp.Void](`location.pathname === "/pprof/allocs-delta/flamegraph" && document.querySelectorAll("#stack-chart .boxtext").length > 5`,
			chromedp.WithPollingTimeout(20*time.Second)),
	)
	type chartState struct {
		Width, Height float64
		Frames        int
		Leaky         bool
		SampleTypes   []string
	}
	st := run(t, ctx, chromedp.Evaluate[chartState](`(() => {
		const r = document.getElementById("stack-chart").getBoundingClientRect();
		return {
			Width: r.width, Height: r.height,
			Frames: document.querySelectorAll("#stack-chart .boxtext").length,
			Leaky: [...document.scripts].some(s => s.textContent.includes("leakycache.(*Worker).Process")),
			SampleTypes: [...document.querySelectorAll("[id^=sampletype-]")].map(a => a.textContent),
		};
	})()`))
	if st.Width < 600 || st.Height < 50 {
		t.Errorf("pprof's flame graph is %.0f×%.0f, want it visible", st.Width, st.Height)
	}
	if st.Frames < 5 {
		t.Errorf("pprof's flame graph draws %d frames", st.Frames)
	}
	// The page's data is the run's profile: the leaky cache allocated in
	// the window.
	if !st.Leaky {
		t.Error("pprof's flame graph data lacks leakycache.(*Worker).Process")
	}
	if strings.Join(st.SampleTypes, ",") != "alloc_objects,alloc_space" {
		t.Errorf("pprof offers sample types %v, want the delta's alloc_objects and alloc_space", st.SampleTypes)
	}
	screenshot(t, ctx, "view-pprof-flamegraph.png")

	// pprof's style sheets draw icons from data: URLs.
	w.check(t, srv.URL+"/", "data:")
}

// TestView_PagesUnderItsPolicy opens the run's own report and heapscope's
// flame graph page through view, whose every response carries a
// Content-Security-Policy: the pages draw, and the browser reports no
// blocked script, style or image.
func TestView_PagesUnderItsPolicy(t *testing.T) {
	_, dir := profileExample(t, "leaky")
	s, err := view.Open(dir, view.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()

	ctx := newBrowser(t)
	w := watch(t, ctx)
	do(t, ctx,
		chromedp.Navigate(srv.URL+"/run/report.html"),
		chromedp.WaitVisible(chromedp.CSS(`#heap-chart`)),
	)
	do(t, ctx,
		chromedp.Navigate(srv.URL+"/flamegraph/allocs-delta"),
		chromedp.Poll[chromedp.Void](`document.querySelector(".hsflame canvas") !== null`, chromedp.WithPollingTimeout(10*time.Second)),
	)
	w.check(t, srv.URL+"/", "data:")
}
