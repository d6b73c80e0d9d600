package browsertests

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/heapscope/heapscope/examples"
	"github.com/heapscope/heapscope/internal/load"
	"github.com/heapscope/heapscope/internal/result"
	runs "github.com/heapscope/heapscope/internal/run"
	"github.com/heapscope/heapscope/internal/target"
)

// pageWatch records what a tab reports: console errors, uncaught
// exceptions, browser log errors (such as Content-Security-Policy
// refusals) and the URL of every request.
type pageWatch struct {
	mu       sync.Mutex
	errors   []string
	requests []string
}

func watch(t *testing.T, ctx context.Context) *pageWatch {
	t.Helper()
	w := &pageWatch{}
	err := chromedp.Listen(ctx, func(ev any) {
		w.mu.Lock()
		defer w.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				w.errors = append(w.errors, "console "+string(ev.Type))
			}
		case *runtime.EventExceptionThrown:
			w.errors = append(w.errors, "exception: "+ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				w.errors = append(w.errors, "log: "+ev.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			w.requests = append(w.requests, ev.Request.URL)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// check fails the test for any error the page reported and for any
// request whose URL does not start with one of the allowed prefixes.
func (w *pageWatch) check(t *testing.T, allowed ...string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.errors {
		t.Errorf("page reported %s", e)
	}
	if len(w.requests) == 0 {
		t.Error("no request recorded: is the network domain watched?")
	}
	for _, u := range w.requests {
		ok := false
		for _, a := range allowed {
			ok = ok || strings.HasPrefix(u, a)
		}
		if !ok {
			t.Errorf("page requested %s, want only %v", u, allowed)
		}
	}
}

// profileExample runs a short real profile of the named example service,
// a child process on 127.0.0.1 as heapscope demo starts it, under load,
// with a CPU profile, and returns the run and its directory.
func profileExample(t *testing.T, name string) (*result.Run, string) {
	t.Helper()
	url, pid := startExample(t, name)
	method, path := examples.DefaultLoad(name)
	res, dir, err := runs.Profile(t.Context(), runs.Config{
		Target:    target.Options{BaseURL: url},
		PID:       pid,
		Duration:  2 * time.Second,
		Snapshots: 4,
		CPU:       true,
		Load:      &load.Options{Targets: []load.Request{{Method: method, URL: url + path}}, Rate: 300},
		OutDir:    t.TempDir(),
	})
	if err != nil {
		t.Fatalf("profile the %s example: %v", name, err)
	}
	return res, dir
}

// box is an element's bounding box with what the test asks of it.
type box struct {
	ID     string  `json:"id"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	// Marks counts the chart's points or the flame graph's frames.
	Marks int `json:"marks"`
	// Inner is the flame graph's SVG size inside its frame.
	InnerWidth  float64 `json:"innerWidth"`
	InnerHeight float64 `json:"innerHeight"`
}

func TestReport_ChartsAndFlameGraphs(t *testing.T) {
	res, dir := profileExample(t, "leaky")
	if res.Files.HTMLReport == "" || len(res.Files.Flames) < 3 {
		t.Fatalf("run wrote report %q and flame graphs %+v (warnings %v), want report.html and three graphs and more", res.Files.HTMLReport, res.Files.Flames, res.Warnings)
	}
	ctx := newBrowser(t)
	w := watch(t, ctx)
	do(t, ctx,
		chromedp.Navigate(fileURL(t, filepath.Join(dir, "report.html"))),
		chromedp.Poll[chromedp.Void](`document.readyState === "complete" && [...document.querySelectorAll("iframe")].every(f => f.contentDocument && f.contentDocument.readyState === "complete")`,
			chromedp.WithPollingTimeout(20*time.Second)),
	)
	boxes := run(t, ctx, chromedp.Evaluate[[]box](`(() => {
		const out = [];
		for (const id of ["heap-chart", "gc-chart"]) {
			const el = document.getElementById(id);
			if (!el) { out.push({id}); continue; }
			const r = el.getBoundingClientRect();
			out.push({id, width: r.width, height: r.height, marks: el.querySelectorAll("circle, line.stem").length});
		}
		for (const f of document.querySelectorAll("iframe")) {
			const r = f.getBoundingClientRect();
			const svg = f.contentDocument.querySelector("svg");
			const s = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
			out.push({id: f.id, width: r.width, height: r.height, marks: f.contentDocument.querySelectorAll("g.f").length,
				innerWidth: s.width, innerHeight: s.height});
		}
		return out;
	})()`))
	got := map[string]box{}
	for _, b := range boxes {
		got[b.ID] = b
	}
	for _, id := range []string{"heap-chart", "gc-chart", "flame-alloc_space", "flame-inuse_space", "flame-cpu"} {
		b, ok := got[id]
		if !ok {
			t.Errorf("%s is not on the page", id)
			continue
		}
		if b.Width < 300 || b.Height < 100 {
			t.Errorf("%s is %.0f×%.0f, want it visible", id, b.Width, b.Height)
		}
		if b.Marks == 0 {
			t.Errorf("%s draws nothing", id)
		}
		if strings.HasPrefix(id, "flame-") && (b.InnerWidth < b.Width-4 || b.InnerHeight < b.Height-4) {
			t.Errorf("%s: its graph is %.0f×%.0f in a %.0f×%.0f frame, want it to fill the frame", id, b.InnerWidth, b.InnerHeight, b.Width, b.Height)
		}
	}
	if n := got["heap-chart"].Marks; n != 4 {
		t.Errorf("heap chart has %d points, want the 4 snapshots", n)
	}

	// The embedded graphs keep their behaviour: a search in one
	// highlights frames there and nowhere else.
	matched := run(t, ctx, chromedp.Evaluate[[]string](`(() => {
		const docs = [...document.querySelectorAll("iframe")].map(f => f.contentDocument);
		const input = docs[0].getElementById("search");
		input.value = "leakycache";
		input.dispatchEvent(new Event("input", {bubbles: true}));
		return docs.map(d => d.getElementById("matched").textContent);
	})()`))
	if len(matched) < 3 || !strings.Contains(matched[0], "%") || matched[1] != "" {
		t.Errorf("matched texts %q: want a share in the first graph only", matched)
	}
	screenshot(t, ctx, "report.png")
	w.check(t, "file://")
}
