package browsertests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heapscope/heapscope/examples"
	"github.com/heapscope/heapscope/internal/load"
	"github.com/heapscope/heapscope/internal/server"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/trigger"
	watcher "github.com/heapscope/heapscope/internal/watch"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// startService starts the named example as a user starts a service: its
// own process, the runtime's default settings, on addr. It stops when the
// test ends.
func startService(t *testing.T, name, addr string) *examples.Process {
	t.Helper()
	t.Setenv(exampleEnv, name)
	p, err := examples.Start(context.Background(), name, os.Args[0], "-addr", addr)
	os.Unsetenv(exampleEnv)
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() { p.Stop() })
	return p
}

// hookReceiver records the events a webhook posts.
type hookReceiver struct {
	mu     sync.Mutex
	events []watcher.Event
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ev watcher.Event
	if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
}

// problemEvents returns the problem events received for a target.
func (h *hookReceiver) problemEvents(target string) []watcher.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []watcher.Event
	for _, ev := range h.events {
		if ev.Kind == "problem" && ev.Target == target {
			out = append(out, ev)
		}
	}
	return out
}

// TestServer_ProblemsOfARealWatch watches, as a user would, a leaking
// service and a healthy one, both under load and started with the
// runtime's defaults: a trigger fires on the leaking one, which is then
// restarted in place. The webhook hears the leak opened once, linking its
// problem's page, and nothing of the healthy service; the targets page
// says which is which; the problem's page names the service's line and
// its fix; the target page lists the restart; the bundle page its trigger
// and verdict. Screenshots of each page are kept with
// $HEAPSCOPE_SCREENSHOTS (docs/images/server).
func TestServer_ProblemsOfARealWatch(t *testing.T) {
	leaky := startService(t, "leaky", "127.0.0.1:0")
	healthy := startService(t, "optimized", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var loads sync.WaitGroup
	for _, svc := range []struct{ name, url string }{{"leaky", leaky.URL}, {"optimized", healthy.URL}} {
		method, path := examples.DefaultLoad(svc.name)
		loads.Go(func() {
			load.Run(ctx, load.Options{Targets: []load.Request{{Method: method, URL: svc.url + path}}, Rate: 200, Duration: 3 * time.Minute})
		})
	}
	defer loads.Wait()
	defer cancel()

	hook := &hookReceiver{}
	hookSrv := httptest.NewServer(hook)
	defer hookSrv.Close()
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := server.New(server.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()

	cfgPath := filepath.Join(t.TempDir(), "heapscope.yaml")
	cfgText := fmt.Sprintf(`webhook:
  url: %s
  external_url: %s
defaults:
  every: 3s
  window: 1s
  poll: 200ms
groups:
  - name: shop
    static:
      - targets: [%s]
    triggers:
      - expr: rss>=1MiB
        cooldown: 1h
  - name: catalogue
    static:
      - targets: [%s]
`, hookSrv.URL, srv.URL, leaky.URL, healthy.URL)
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath, config.Options{CheckTrigger: func(e string) error { _, err := trigger.Parse(e); return err }})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watcher.New(watcher.Options{Config: cfg, Store: st, Version: "test", BundleWindow: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()

	keyOf := func(url string) string { return url + "/debug/pprof/" }
	leakyKey, healthyKey := keyOf(leaky.URL), keyOf(healthy.URL)
	history := func(key string) store.History {
		h, err := st.History(store.Query{Target: key})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	waitUntil(t, ctx, "three runs of each and a bundle of the leaking one", func() bool {
		return len(history(leakyKey).Runs) >= 3 && len(history(leakyKey).Bundles) >= 1 && len(history(healthyKey).Runs) >= 3
	})
	// Restarted in place: the same address, another process.
	addr := strings.TrimPrefix(leaky.URL, "http://")
	if err := leaky.Stop(); err != nil {
		t.Fatal(err)
	}
	startService(t, "leaky", addr)
	restartedAt := time.Now()
	waitUntil(t, ctx, "the restart stored and a run after it", func() bool {
		evs, err := st.Events(store.Query{Target: leakyKey})
		if err != nil {
			t.Fatal(err)
		}
		restarted := false
		for _, e := range evs {
			restarted = restarted || e.Kind == store.EventRestart
		}
		runs := history(leakyKey).Runs
		return restarted && len(runs) > 0 && runs[0].Time.After(restartedAt)
	})
	cancel()
	if err := <-ran; err != nil {
		t.Errorf("watch: %v", err)
	}

	opened := hook.problemEvents(leakyKey)
	if len(opened) != 1 || opened[0].Change != "opened" || !strings.Contains(opened[0].Link, "/problem?target=") {
		t.Errorf("problem events of the leaking service %+v: want one, opened, linking its page", opened)
	}
	if evs := hook.problemEvents(healthyKey); len(evs) != 0 {
		t.Errorf("problem events of the healthy service %+v: want none", evs)
	}

	browser := newBrowser(t)
	pw := watch(t, browser)
	do(t, browser, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#targets`)))
	health := run(t, browser, chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll("#targets tbody tr")].map(tr =>
		[tr.dataset.target, tr.querySelector(".health").textContent]))`))
	if health[leakyKey] != "problem" || health[healthyKey] != "ok" {
		t.Errorf("targets page health %v: want the leaking service a problem, the healthy one ok", health)
	}
	screenshot(t, browser, "targets.png")

	// Its problem's page, from the headline.
	do(t, browser, chromedp.Click(chromedp.CSS(`#targets tbody tr[data-target="`+leakyKey+`"] .top a`)), chromedp.WaitVisible(chromedp.CSS(`#fix`)))
	fix := run(t, browser, chromedp.Evaluate[string](`document.getElementById("fix").innerText`))
	if !strings.Contains(fix, "leakycache.go:") || !strings.Contains(fix, "the fix") || strings.Contains(fix, "no longer holds") {
		t.Errorf("the problem's page says %q: want the service's line in leakycache.go and its fix", fix)
	}
	screenshot(t, browser, "problem.png")

	do(t, browser, chromedp.Navigate(srv.URL+"/target?target="+url.QueryEscape(leakyKey)), chromedp.WaitVisible(chromedp.CSS(`figure.timeline svg`)))
	events := run(t, browser, chromedp.Evaluate[string](`document.getElementById("events").innerText`))
	if !strings.Contains(events, "restarted") || !strings.Contains(events, "rss>=1MiB fired at") {
		t.Errorf("the target page's events %q: want the restart and the trigger", events)
	}
	screenshot(t, browser, "target.png")

	bundle := history(leakyKey).Bundles[0]
	do(t, browser, chromedp.Navigate(srv.URL+"/run/"+bundle.Path+"/"), chromedp.WaitVisible(chromedp.CSS(`h1`)))
	page := run(t, browser, chromedp.Evaluate[string](`document.body.innerText`))
	if !strings.Contains(page, "rss>=1MiB fired at") || !strings.Contains(page, "Verdict") {
		t.Errorf("the bundle's page does not lead with its trigger and verdict:\n%.600s", page)
	}
	screenshot(t, browser, "bundle.png")
	pw.check(t, srv.URL)
}

// waitUntil polls cond until it holds, or fails the test when ctx ends
// first, saying what it waited for.
func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}
