package browsertests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heapscope/heapscope/examples"
	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/load"
	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/server"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/testserver"
	"github.com/heapscope/heapscope/internal/testserver/crawl"
	"github.com/heapscope/heapscope/internal/trigger"
	watcher "github.com/heapscope/heapscope/internal/watch"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// rssStep is how many MiB the leaky service's resident set grows after
// warm-up before its memory trigger fires: under its load (about 15 MiB a
// minute of leak) some ten seconds, two or three scheduled captures.
const rssStep = 6

// webhookReceiver records every event a watch's webhook posts.
type webhookReceiver struct {
	mu     sync.Mutex
	events []watcher.Event
	bad    []string
}

func (r *webhookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var ev watcher.Event
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		err = json.Unmarshal(body, &ev)
	}
	if err != nil || req.Method != http.MethodPost {
		r.bad = append(r.bad, fmt.Sprintf("%s %s: %v: %.200s", req.Method, req.URL, err, body))
		http.Error(w, "want a POSTed event", http.StatusBadRequest)
		return
	}
	r.events = append(r.events, ev)
	w.WriteHeader(http.StatusNoContent)
}

// received returns the events of a target so far, in the order posted.
func (r *webhookReceiver) received(target string) []watcher.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []watcher.Event
	for _, ev := range r.events {
		if ev.Target == target {
			out = append(out, ev)
		}
	}
	return out
}

// problemEvents are the events of a problem that changed as what says.
func problemEvents(evs []watcher.Event, what string) []watcher.Event {
	var out []watcher.Event
	for _, ev := range evs {
		if ev.Kind == "problem" && ev.Change == what {
			out = append(out, ev)
		}
	}
	return out
}

// eventLines are events as one line each, for failure messages.
func eventLines(evs []watcher.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n\t%s %s %s", ev.Kind, ev.Change, ev.Text)
	}
	return b.String()
}

// leakLine is the line of the leaky example that leaks, file:line, as
// its source says.
func leakLine(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "examples", "leakycache", "leakycache.go"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.Contains(sc.Text(), "// the leak:") {
			return "leakycache.go:" + strconv.Itoa(n)
		}
	}
	t.Fatal("leakycache.go has no line marked as the leak")
	return ""
}

// watchConfig writes the config of a watch of two groups, the leaky
// service with a memory trigger and the healthy one without, posting to
// a webhook that links the pages of the server at external, and loads it
// as heapscope watch --config does.
func watchConfig(t *testing.T, leaky, healthy, webhook, external, triggerExpr string) *config.Config {
	t.Helper()
	yaml := fmt.Sprintf(`webhook:
  url: %s
  external_url: %s
  repeat_interval: 1h
defaults:
  every: 6s
  window: 4s
  poll: 250ms
  timeout: 10s
groups:
  - name: leaky
    labels: {service: leakycache}
    triggers:
      - expr: %q
        cooldown: 1h
    static:
      - targets: [%s]
  - name: healthy
    labels: {service: optimizedcache}
    static:
      - targets: [%s]
`, webhook, external, triggerExpr, leaky, healthy)
	path := filepath.Join(t.TempDir(), "heapscope.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, config.Options{CheckTrigger: trigger.Check})
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	return cfg
}

// keyOf is a target's key as watch names it, from its base URL.
func keyOf(t *testing.T, cfg *config.Config, base string) string {
	t.Helper()
	ts, err := cfg.Targets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range ts {
		if tg.URL.String() == base {
			return tg.Key
		}
	}
	t.Fatalf("no target of %s in %v", base, ts)
	return ""
}

// TestWatch_LeakyAndHealthyFromTargetsToBundle watches a leaking and a
// healthy example service as a team would — under load, a memory trigger
// on the leaking one, the healthy one restarted once, a webhook — then
// reads the store through the server's pages: the targets page says
// which service has a problem, the leaking one's page leads with it, the
// problem's page names the service's line and the fix, the trigger's
// bundle says what fired it and what it found, and every link of the
// site answers. The webhook heard the leak opened once and nothing of a
// problem of the healthy service: its restart only.
func TestWatch_LeakyAndHealthyFromTargetsToBundle(t *testing.T) {
	browser, browserStarted := startBrowser(t)
	leakAt := leakLine(t)
	// The services as their users build them: the leaky one's own code
	// is then the example's, its main module's.
	bins := buildExamples(t, "leaky", "optimized")
	leaky := runBuiltExample(t, bins["leaky"], "leaky", "")
	healthy := runBuiltExample(t, bins["optimized"], "optimized", "")

	// Load all along at both, ending by itself should the test not
	// stop it: the leaky service faster, so that its leak adds more to
	// the live heap in a 4 s window than the moment's traffic holds
	// (diagnose's floor: 256 KiB, and 5 % of the heap).
	stopLoad := make(chan struct{})
	var loads sync.WaitGroup
	for _, l := range []struct {
		p    *exampleProcess
		rate float64
	}{{leaky, 1000}, {healthy, 300}} {
		method, path := examples.DefaultLoad(l.p.Name)
		loads.Go(func() {
			_, err := load.Run(context.Background(), load.Options{Targets: []load.Request{{Method: method, URL: l.p.URL + path}},
				Rate: l.rate, Duration: 2 * time.Minute, Timeout: 2 * time.Second, Stop: stopLoad})
			if err != nil {
				t.Errorf("load %s: %v", l.p.Name, err)
			}
		})
	}
	loadStopped := sync.OnceFunc(func() {
		close(stopLoad)
		loads.Wait()
	})
	t.Cleanup(loadStopped)

	recv := &webhookReceiver{}
	hook := httptest.NewServer(recv)
	t.Cleanup(hook.Close)
	st, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// The server reads the store as watch writes it; the webhook's
	// links lead to its pages.
	srvHandler, err := server.New(server.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(srvHandler)
	t.Cleanup(srv.Close)

	// Two seconds of load before the watch: the connections open and
	// the healthy service's cache fills, as in a service that has been
	// running a while. The trigger fires once the leak has added a few
	// MiB to the resident set it has then, after a few scheduled
	// captures.
	warm := time.NewTimer(2 * time.Second)
	<-warm.C
	smp, err := trigger.Local{PID: leaky.PID}.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	triggerExpr := fmt.Sprintf("rss>=%dMiB", smp.RSS>>20+rssStep)
	t.Logf("leaky service's RSS after warm-up: %s; trigger %s", humanize.Bytes(float64(smp.RSS)), triggerExpr)
	cfg := watchConfig(t, leaky.URL, healthy.URL, hook.URL, srv.URL, triggerExpr)
	leakyKey, healthyKey := keyOf(t, cfg, leaky.URL), keyOf(t, cfg, healthy.URL)
	var logBuf testserver.Buffer
	w, err := watcher.New(watcher.Options{Config: cfg, Store: st, Version: "test", BundleWindow: 4 * time.Second,
		Log: slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	watchCtx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	start := time.Now()
	go func() { ran <- w.Run(watchCtx) }()
	watchStopped := sync.OnceFunc(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("watch: %v", err)
		}
	})
	t.Cleanup(watchStopped)
	defer func() {
		if t.Failed() {
			t.Logf("watch's log:\n%s", logBuf.String())
		}
	}()

	// until polls cond every 100 ms until it holds or the deadline
	// passes, and says which.
	deadline := start.Add(75 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	until := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after %s", what, time.Since(start).Round(time.Second))
			}
			<-tick.C
		}
		t.Logf("%s after %s", what, time.Since(start).Round(100*time.Millisecond))
	}
	runsOf := func(key string, since time.Time) []store.Entry {
		h, err := st.History(store.Query{Target: key, Since: since})
		if err != nil {
			t.Fatal(err)
		}
		var out []store.Entry
		for _, e := range h.Runs {
			if e.Status == "complete" {
				out = append(out, e)
			}
		}
		return out
	}

	// The healthy service restarts, as a deploy would restart it, once
	// watch has captured it: the same address, a new process.
	until("a capture of the healthy service", func() bool { return len(runsOf(healthyKey, time.Time{})) > 0 })
	u, err := url.Parse(healthy.URL)
	if err != nil {
		t.Fatal(err)
	}
	oldPID := healthy.PID
	if err := healthy.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	healthy = runBuiltExample(t, bins["optimized"], "optimized", u.Host)
	t.Logf("healthy service restarted: pid %d, then %d, at %s", oldPID, healthy.PID, healthy.URL)

	until("the restart stored", func() bool {
		evs, err := st.Events(store.Query{Target: healthyKey})
		return err == nil && slices.ContainsFunc(evs, func(e store.TargetEvent) bool { return e.Kind == store.EventRestart })
	})
	until("the leak's problem opened, to the webhook", func() bool { return len(problemEvents(recv.received(leakyKey), "opened")) > 0 })
	until("the trigger's bundle", func() bool {
		h, err := st.History(store.Query{Target: leakyKey})
		return err == nil && len(h.Bundles) > 0
	})
	// Two captures of the healthy service after its restart: growth
	// that only the first of them showed (its cache filling again) is
	// told from a leak by the second.
	until("two captures of the healthy service since its restart", func() bool { return len(runsOf(healthyKey, restarted)) >= 2 })
	watchStopped()
	loadStopped()
	t.Logf("watch ran %s", time.Since(start).Round(100*time.Millisecond))

	// The webhook: the leak opened once; of the healthy service, its
	// restart and nothing else.
	leakyEvents, healthyEvents := recv.received(leakyKey), recv.received(healthyKey)
	t.Logf("webhook, leaky:%s\nwebhook, healthy:%s", eventLines(leakyEvents), eventLines(healthyEvents))
	opened := problemEvents(leakyEvents, "opened")
	var leak *problem.Problem
	var link string
	for _, ev := range opened {
		if ev.Problem != nil && strings.HasSuffix(ev.Problem.Where, leakAt) {
			leak, link = ev.Problem, ev.Link
		}
	}
	if len(opened) != 1 || leak == nil {
		t.Errorf("the webhook heard %d problems opened on the leaky service, want the leak at %s once:%s", len(opened), leakAt, eventLines(leakyEvents))
	}
	if leak == nil {
		t.FailNow()
	}
	if !strings.HasPrefix(leak.Kind, "leak.") || problem.Rank(leak.Severity) < problem.Rank("medium") || leak.Unconfirmed {
		t.Errorf("the problem opened is %+v: want a leak, medium or above, confirmed", leak)
	}
	for _, ev := range leakyEvents {
		if ev.Kind == "problem" && ev.Problem != nil && ev.Problem.Cause == leak.Cause && ev.Change != "opened" {
			t.Errorf("the webhook heard the leak %s too: %s", ev.Change, ev.Text)
		}
	}
	if len(healthyEvents) != 1 || healthyEvents[0].Kind != "restart" || healthyEvents[0].OOMKill {
		t.Errorf("the webhook heard of the healthy service:%s\nwant its restart alone", eventLines(healthyEvents))
	}
	if recv.bad != nil {
		t.Errorf("the webhook posted what is not an event: %q", recv.bad)
	}
	if want := srv.URL + "/problem?target=" + url.QueryEscape(leakyKey) + "&cause=" + url.QueryEscape(leak.Cause) + "&"; !strings.HasPrefix(link, want) {
		t.Fatalf("the opened event links %q, want the problem's page %s…", link, want)
	}
	h, err := st.History(store.Query{Target: leakyKey})
	if err != nil || len(h.Bundles) != 1 {
		t.Fatalf("the leaky service's bundles: %v, %v; want the trigger's one", h.Bundles, err)
	}
	bundle := h.Bundles[0]

	if err := <-browserStarted; err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx := browser
	pw := watch(t, ctx)

	// The targets page: the leaking service has a problem, its top
	// problem is the leak at the service's line; the healthy one is ok.
	do(t, ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#targets`)))
	type targetRow struct {
		Target, Health, Why, Top, TopLink string
	}
	rows := run(t, ctx, chromedp.Evaluate[[]targetRow](`[...document.querySelectorAll("#targets tbody tr")].map(tr => ({
		Target: tr.dataset.target || "",
		Health: tr.querySelector(".health") ? tr.querySelector(".health").textContent : "",
		Why: [...tr.querySelectorAll(".why")].map(d => d.textContent).join(" | "),
		Top: tr.querySelector(".top") ? tr.querySelector(".top").textContent : "",
		TopLink: tr.querySelector(".top a") ? tr.querySelector(".top a").getAttribute("href") : "",
	}))`))
	byTarget := map[string]targetRow{}
	for _, r := range rows {
		byTarget[r.Target] = r
	}
	if len(rows) != 2 {
		t.Errorf("targets page rows %+v: want the two services", rows)
	}
	if r := byTarget[leakyKey]; r.Health != problem.HealthProblem || !strings.Contains(r.Top, leak.Severity+": ") || !strings.Contains(r.Top, leakAt) ||
		!strings.HasPrefix(r.TopLink, "/problem?target="+url.QueryEscape(leakyKey)+"&cause="+url.QueryEscape(leak.Cause)+"&") {
		t.Errorf("targets page, leaky service: %+v; want a problem, its top problem the leak at %s linking its page", r, leakAt)
	}
	if r := byTarget[healthyKey]; r.Health != problem.HealthOK || r.Top != "" {
		t.Errorf("targets page, healthy service: %+v; want ok, no problem open", r)
	}
	screenshot(t, ctx, "watch-targets.png")

	// The leaking service's page leads with the leak, open.
	do(t, ctx, chromedp.Click(chromedp.CSS(`#targets tbody tr[data-target="`+leakyKey+`"] td a`)), chromedp.WaitVisible(chromedp.CSS(`#problems`)))
	type problemRow struct {
		Class, Text, Where string
	}
	prows := run(t, ctx, chromedp.Evaluate[[]problemRow](`[...document.querySelectorAll("#problems tbody tr")].map(tr => ({
		Class: tr.className, Text: tr.textContent, Where: tr.querySelector("code") ? tr.querySelector("code").textContent : ""}))`))
	if len(prows) == 0 || !strings.Contains(" "+prows[0].Class+" ", " open ") || !strings.Contains(prows[0].Class, leak.Severity) || !strings.HasSuffix(prows[0].Where, leakAt) {
		t.Errorf("the leaky service's problems %+v: want the leak at %s first, open, %s", prows, leakAt, leak.Severity)
	}
	events := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#events tbody tr")].map(tr => tr.textContent)`))
	if !slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, triggerExpr) && strings.Contains(e, bundle.Path) }) {
		t.Errorf("the leaky service's events %q: want the trigger %s and its bundle", events, triggerExpr)
	}
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("figure.timeline svg circle").length`)); n == 0 {
		t.Error("the leaky service's timelines draw no capture")
	}
	screenshot(t, ctx, "watch-target.png")

	// The healthy service's page: its restart, no problem open.
	do(t, ctx, chromedp.Navigate(srv.URL+"/target?target="+url.QueryEscape(healthyKey)), chromedp.WaitVisible(chromedp.CSS(`#events`)))
	events = run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#events tbody tr")].map(tr => tr.textContent)`))
	if !slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, "restarted") }) {
		t.Errorf("the healthy service's events %q: want its restart", events)
	}
	if open := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#problems tbody tr.open.medium, #problems tbody tr.open.high, #problems tbody tr.reopened")].map(tr => tr.textContent)`)); len(open) > 0 {
		t.Errorf("the healthy service has problems open: %q", open)
	}

	// The problem's page, from the webhook's link: the service's line,
	// the fix, the captures that showed it.
	do(t, ctx, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`#fix`)))
	type problemPage struct {
		Headline, Line, Fix string
		Shows               int
	}
	pp := run(t, ctx, chromedp.Evaluate[problemPage](`({
		Headline: document.getElementById("headline").textContent,
		Line: document.querySelector("#fix dd code").textContent,
		Fix: document.querySelectorAll("#fix dd")[1].textContent,
		Shows: document.querySelectorAll("#captures tbody tr.shows").length,
	})`))
	if !strings.Contains(pp.Headline, leak.Severity) || !strings.Contains(pp.Headline, "open") || !strings.HasSuffix(pp.Line, leakAt) ||
		!strings.Contains(pp.Fix, "bound the map") || pp.Shows < 1 {
		t.Errorf("the problem's page says %+v: want the leak open at %s, the map's fix, the captures that showed it", pp, leakAt)
	}
	screenshot(t, ctx, "watch-problem.png")

	// The trigger's bundle: what fired it, complete, its verdict names
	// the leak, every file linked.
	do(t, ctx, chromedp.Navigate(srv.URL+"/run/"+bundle.Path+"/"), chromedp.WaitVisible(chromedp.CSS(`#status`)))
	type bundlePage struct {
		Title, Status string
		Verdict       []string
		Files         int
	}
	bp := run(t, ctx, chromedp.Evaluate[bundlePage](`({
		Title: document.title,
		Status: document.getElementById("status").textContent,
		Verdict: [...document.querySelectorAll("#verdict tr")].map(tr => tr.textContent),
		Files: document.querySelectorAll("#files a").length,
	})`))
	if !strings.HasPrefix(bp.Title, "Bundle of "+leakyKey+": "+triggerExpr+" fired at ") || !strings.HasPrefix(bp.Status, "complete") ||
		!slices.ContainsFunc(bp.Verdict, func(v string) bool { return strings.Contains(v, leakAt) && strings.Contains(v, "bound the map") }) || bp.Files < 5 {
		t.Errorf("the bundle's page says %+v: want its trigger, complete, the leak at %s in its verdict, its files", bp, leakAt)
	}
	screenshot(t, ctx, "watch-bundle.png")
	pw.check(t, srv.URL+"/", "data:")

	// Every link of the site, from the targets page.
	res, err := crawl.Site(srv.Client(), srv.URL, crawl.Options{Key: pprofViewKey})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Faults() {
		t.Error(f)
	}
	t.Logf("%d URLs crawled; the test took %s", len(res.Pages), time.Since(start).Round(100*time.Millisecond))
}

// pprofViewKey visits pprof's UI once per profile: its links only
// change the view's query.
func pprofViewKey(u *url.URL) string {
	if strings.Contains(u.Path, "/pprof/") || strings.HasPrefix(u.Path, "/merged/") {
		return u.Path
	}
	return ""
}
