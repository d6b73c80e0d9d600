package server_test

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/server"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/storetest"
)

// TestProblems_sameLeakIsOneProblem serves a store of three captures of
// the leaky example (a recorded run, committed as watch commits one) that
// all find the leak: the problems route lists it once, in three captures,
// as heapscope history does, and its answer is what the document says.
func TestProblems_sameLeakIsOneProblem(t *testing.T) {
	st := freshStore(t)
	const target = "http://127.0.0.1:6060/debug/pprof/"
	var last store.Entry
	for _, min := range []int{0, 10, 20} {
		last = storetest.Commit(t, st, store.KindRun, target, storetest.Leaky, store.Entry{Time: storetest.At(min), Scheduled: true})
	}
	storetest.Commit(t, st, store.KindRun, "http://127.0.0.1:6061/debug/pprof/", storetest.Leaky, store.Entry{Time: storetest.At(5), Scheduled: true})
	s := newServer(t, server.Options{Store: st})
	rng := "&from=" + url.QueryEscape(storetest.At(-60).Format(time.RFC3339)) + "&to=" + url.QueryEscape(storetest.At(60).Format(time.RFC3339))

	var got struct{ Problems []problem.Problem }
	decode(t, s, "/api/v1/problems?target="+url.QueryEscape(target)+rng, 200, &got)
	if len(got.Problems) != 1 {
		t.Fatalf("%d problems %+v, want the leak once", len(got.Problems), got.Problems)
	}
	p := got.Problems[0]
	if p.Target != target || p.State != problem.Open || p.Captures != 3 || p.Severity != "high" || !strings.HasSuffix(p.Where, "leakycache.go:38") ||
		!p.FirstSeen.Equal(storetest.At(0)) || !p.LastSeen.Equal(storetest.At(20)) || p.Latest != last.Path || p.Trend == nil || len(p.Evidence) == 0 {
		t.Errorf("problem %+v: want the leak open at leakycache.go:38 in 3 captures from 12:00 to 12:20, with its trend and evidence", p)
	}

	// Every target's, each once; a range that holds the first capture
	// alone sees it in one.
	decode(t, s, "/api/v1/problems?"+rng[1:], 200, &got)
	if len(got.Problems) != 2 || got.Problems[0].Target == got.Problems[1].Target {
		t.Errorf("problems of every target: %+v, want one of each", got.Problems)
	}
	decode(t, s, "/api/v1/problems?target="+url.QueryEscape(target)+"&from="+url.QueryEscape(storetest.At(-1).Format(time.RFC3339))+
		"&to="+url.QueryEscape(storetest.At(1).Format(time.RFC3339)), 200, &got)
	if len(got.Problems) != 1 || got.Problems[0].Captures != 1 {
		t.Errorf("problems from 11:59 to 12:01: %+v, want the leak in one capture", got.Problems)
	}
	decode(t, s, "/api/v1/problems?target="+url.QueryEscape(target)+rng+"&label=group=nope", 200, &got)
	if len(got.Problems) != 0 {
		t.Errorf("label=group=nope: %+v, want none", got.Problems)
	}

	answersAsDocumented(t, s, "/api/v1/problems?target="+url.QueryEscape(target)+rng, "/paths/~1api~1v1~1problems/get/responses/200/content/application~1json/schema")
}

// TestUI_targetPageLeadsWithItsProblems serves three captures of the
// leaky example that all find the leak: the target page lists the
// problems the problems route answers, each with its state, severity,
// headline, site, first and last seen and captures, before the charts.
func TestUI_targetPageLeadsWithItsProblems(t *testing.T) {
	st := freshStore(t)
	const target = "http://127.0.0.1:6060/debug/pprof/"
	for _, min := range []int{0, 10, 20} {
		storetest.Commit(t, st, store.KindRun, target, storetest.Leaky, store.Entry{Time: storetest.At(min), Scheduled: true})
	}
	s := newServer(t, server.Options{Store: st})
	rng := "target=" + url.QueryEscape(target) + "&from=" + url.QueryEscape(storetest.At(-60).Format(time.RFC3339)) +
		"&to=" + url.QueryEscape(storetest.At(60).Format(time.RFC3339))
	var got struct{ Problems []problem.Problem }
	decode(t, s, "/api/v1/problems?"+rng, 200, &got)
	if len(got.Problems) == 0 {
		t.Fatal("no problem: the fixture's leak should be one")
	}
	status, body := pageOf(t, s, "/target?"+rng)
	if status != 200 {
		t.Fatalf("target page: %d %s", status, body)
	}
	charts := strings.Index(body, `<figure class="timeline"`)
	table := strings.Index(body, `<table class="problems" id="problems">`)
	if table < 0 || charts < 0 || table > charts {
		t.Fatalf("target page: problems table at %d, charts at %d: want the problems first", table, charts)
	}
	// Rows compared as they read.
	body = html.UnescapeString(body)
	last := strings.Index(body, `<table class="problems" id="problems">`)
	for _, p := range got.Problems {
		row := fmt.Sprintf(`<tr class="%s %s"><td>%s</td><td>%s</td><td><a href="/problem?target=%s&cause=%s&from=`,
			p.State, p.Severity, p.State, p.Severity, url.QueryEscape(target), url.QueryEscape(p.Cause))
		if !strings.Contains(body, row) {
			t.Errorf("target page: no link of the problem %q to its page", p.Headline())
		}
		row = fmt.Sprintf(`">%s</a></td><td><code title="%s">%s</code></td><td>%s</td><td>%s</td><td>%d</td>`, p.Headline(), p.Where, problem.ShortWhere(p.Where),
			p.FirstSeen.UTC().Format("2006-01-02 15:04Z"), p.LastSeen.UTC().Format("2006-01-02 15:04Z"), p.Captures)
		i := strings.Index(body, row)
		if i < 0 {
			t.Errorf("target page: no row %s", row)
			continue
		}
		if i < last {
			t.Errorf("target page: problem %q out of the route's order", p.Headline())
		}
		last = i
	}
	if p := got.Problems[0]; p.State != problem.Open || p.Captures != 3 {
		t.Errorf("first problem %+v: want the leak, open, in 3 captures", p)
	}
	if !strings.Contains(body, `href="/run/`+got.Problems[0].Latest+`/"`) {
		t.Errorf("target page: no link to the latest capture %s", got.Problems[0].Latest)
	}
}

// TestTargets_aLeakingServiceIsNotOK: three captures of the leaky example
// in the last hour, each complete, each finding the leak: the target's
// health is a problem, the leak its top problem and its first reason, on
// the API and on the targets page — not the green "ok" of a capture that
// succeeded.
func TestTargets_aLeakingServiceIsNotOK(t *testing.T) {
	st := freshStore(t)
	const target = "http://127.0.0.1:6060/debug/pprof/"
	now := time.Now()
	for _, ago := range []time.Duration{30, 20, 10} {
		storetest.Commit(t, st, store.KindRun, target, storetest.Leaky, store.Entry{Time: now.Add(-ago * time.Minute), Scheduled: true})
	}
	s := newServer(t, server.Options{Store: st})
	var got struct{ Targets []server.Target }
	decode(t, s, "/api/v1/targets", 200, &got)
	if len(got.Targets) != 1 {
		t.Fatalf("targets %+v, want one", got.Targets)
	}
	tg := got.Targets[0]
	if tg.Health != problem.HealthProblem || tg.Status.Top == nil || !strings.HasSuffix(tg.Status.Top.Where, "leakycache.go:38") ||
		len(tg.Status.Reasons) == 0 || !strings.HasPrefix(tg.Status.Reasons[0], "high problem: leak.inuse-growth at ") {
		t.Errorf("target %+v: want health problem, the leak on top and first among the reasons", tg)
	}
	code, page := pageOf(t, s, "/")
	if code != 200 || !strings.Contains(page, `class="health problem"`) || !strings.Contains(page, "high: leak.inuse-growth at ") || strings.Contains(page, `class="health ok"`) {
		t.Errorf("targets page lacks the problem's health and headline:\n%s", page)
	}
	// The headline opens the problem's page.
	m := regexp.MustCompile(`<div class="top high"><a href="([^"]+)">`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("targets page: the top problem links nowhere:\n%s", page)
	}
	if code, body := pageOf(t, s, html.UnescapeString(m[1])); code != 200 || !strings.Contains(html.UnescapeString(body), tg.Status.Top.Headline()) {
		t.Errorf("GET %s: %d, want the problem's page:\n%s", m[1], code, body)
	}
}

// TestUI_targetPageOpensOnItsData: three captures over the last half
// hour: the target page, asked for no range, draws the half hour (and a
// little before), not the day whose right end would hold every dot.
func TestUI_targetPageOpensOnItsData(t *testing.T) {
	st := freshStore(t)
	const target = "http://127.0.0.1:6060/debug/pprof/"
	now := time.Now()
	for _, ago := range []time.Duration{30, 20, 10} {
		storetest.Commit(t, st, store.KindRun, target, storetest.Leaky, store.Entry{Time: now.Add(-ago * time.Minute), Scheduled: true})
	}
	s := newServer(t, server.Options{Store: st})
	code, page := pageOf(t, s, "/target?target="+url.QueryEscape(target))
	if code != 200 {
		t.Fatalf("target page: %d %s", code, page)
	}
	m := regexp.MustCompile(`name="from" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("target page has no from field:\n%s", page)
	}
	from, err := time.Parse(time.RFC3339, m[1])
	if err != nil {
		t.Fatal(err)
	}
	if oldest := now.Add(-30 * time.Minute); from.After(oldest) || from.Before(oldest.Add(-5*time.Minute)) {
		t.Errorf("the page opens from %s: want a little before the oldest capture, %s", from, oldest.UTC().Format(time.RFC3339))
	}
	if n := strings.Count(page, `data-metric="rss"`); n != 1 {
		t.Errorf("%d RSS charts", n)
	}
}

// TestUI_problemPage: a clear capture of the leaky example's service (its
// findings dropped), then three that find the leak, then a bundle that
// saw the heap grow without placing it: the problem's page names the
// service's line and the fix of the latest capture that placed it, lists
// the five captures with which of them show it, and compares the latest
// run that shows it with the clear one.
func TestUI_problemPage(t *testing.T) {
	st := freshStore(t)
	const target = "http://127.0.0.1:6060/debug/pprof/"
	clear := storetest.CommitEdited(t, st, store.KindRun, target, storetest.Leaky, store.Entry{Time: storetest.At(-10), Scheduled: true},
		func(r *result.Run) { r.Findings = nil })
	for _, min := range []int{0, 10, 20} {
		storetest.Commit(t, st, store.KindRun, target, storetest.Leaky, store.Entry{Time: storetest.At(min), Scheduled: true})
	}
	// A trigger's bundle whose short window saw the heap grow but could
	// not place it: a sign of the same leak.
	storetest.CommitEdited(t, st, store.KindBundle, target, storetest.Leaky, store.Entry{Time: storetest.At(25),
		Trigger: &store.Trigger{Expr: "rss>=1MiB", Value: 2 << 20, Threshold: 1 << 20, Unit: "bytes"}}, func(r *result.Run) {
		r.Findings = []result.Finding{{ID: "leak.live-growth", Severity: "high", Title: "the live heap grows; the sampled profiles cannot place it yet",
			Evidence: map[string]float64{"live_slope_bytes_per_minute": 1 << 20}}}
	})
	s := newServer(t, server.Options{Store: st})
	rng := "&from=" + url.QueryEscape(storetest.At(-60).Format(time.RFC3339)) + "&to=" + url.QueryEscape(storetest.At(60).Format(time.RFC3339))
	var got struct{ Problems []problem.Problem }
	decode(t, s, "/api/v1/problems?target="+url.QueryEscape(target)+rng, 200, &got)
	if len(got.Problems) != 1 {
		t.Fatalf("problems %+v: want the leak once, its unplaced sign in it", got.Problems)
	}
	p := got.Problems[0]
	var leak result.Finding
	for _, f := range storetest.Fixture(t, storetest.Leaky).Findings {
		if problem.CauseOf(f) == p.Cause {
			leak = f
		}
	}
	if leak.Fix == "" {
		t.Fatalf("the fixture has no finding of cause %q with a fix", p.Cause)
	}

	code, page := pageOf(t, s, "/problem?target="+url.QueryEscape(target)+"&cause="+url.QueryEscape(p.Cause)+rng)
	if code != 200 {
		t.Fatalf("problem page: %d %s", code, page)
	}
	page = html.UnescapeString(page)
	for _, want := range []string{
		p.Headline(),
		"<code>" + humanize.Location(leak.File, leak.Line) + "</code>",
		leak.Fix,
		"in 4 captures",
		`<a href="/run/` + clear.Path + `/">`,
		`id="diff-link" href="/compare?target=`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("problem page: no %q in\n%s", want, page)
		}
	}
	if n, clearRows := strings.Count(page, "<td>shows it</td>"), strings.Count(page, "<td>clear</td>"); n != 4 || clearRows != 1 {
		t.Errorf("problem page: %d captures show it, %d are clear: want 4 (the bundle's unplaced sign among them) and 1", n, clearRows)
	}
	// The comparison it links to compares the clear run with the latest.
	m := regexp.MustCompile(`id="diff-link" href="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no diff link")
	}
	code, cmp := pageOf(t, s, m[1])
	if code != 200 || !strings.Contains(cmp, "One run per side") {
		t.Errorf("GET %s: %d, want the comparison of one run per side:\n%s", m[1], code, cmp)
	}

	// A cause the target does not have is a 404 that says so.
	if code, body := pageOf(t, s, "/problem?target="+url.QueryEscape(target)+"&cause=nope"+rng); code != 404 || !strings.Contains(body, `no problem "nope"`) {
		t.Errorf("unknown cause: %d %s", code, body)
	}
}

// TestUI_outagesAndRestarts: captures of a service, and what watch
// stored between them — an outage that ended, a restart, an OOM kill, an
// outage that goes on: the events route lists them as the document
// says; the target page shades each outage on its charts, marks the
// restart and the kill, and lists them; the target is down since the
// last outage, for a server without the watcher as for one with it.
func TestUI_outagesAndRestarts(t *testing.T) {
	st := freshStore(t)
	const target = "http://127.0.0.1:6060/debug/pprof/"
	now := time.Now().UTC().Truncate(time.Second)
	ago := func(min int) time.Time { return now.Add(-time.Duration(min) * time.Minute) }
	for _, min := range []int{30, 20} {
		storetest.Commit(t, st, store.KindRun, target, storetest.Leaky, store.Entry{Time: ago(min), Scheduled: true})
	}
	for _, e := range []store.TargetEvent{
		{Target: target, Time: ago(28), Kind: store.EventDown, Detail: "connection refused"},
		{Target: target, Time: ago(25), Kind: store.EventUp, Detail: "captured again"},
		{Target: target, Time: ago(15), Kind: store.EventRestart, Detail: "pid 10 → 11"},
		{Target: target, Time: ago(12), Kind: store.EventOOMKill, Detail: "oom_kill 0 → 1"},
		{Target: target, Time: ago(10), Kind: store.EventDown, Detail: "503 Service Unavailable"},
	} {
		if err := st.AddEvent(e); err != nil {
			t.Fatal(err)
		}
	}
	s := newServer(t, server.Options{Store: st})
	rng := "target=" + url.QueryEscape(target) + "&from=" + url.QueryEscape(ago(40).Format(time.RFC3339)) + "&to=" + url.QueryEscape(now.Format(time.RFC3339))

	var got struct{ Events []server.Event }
	decode(t, s, "/api/v1/events?"+rng, 200, &got)
	var kinds []string
	for _, e := range got.Events {
		kinds = append(kinds, e.Kind)
	}
	if strings.Join(kinds, ",") != "down,oom_kill,restart,up,down" || got.Events[0].Detail != "503 Service Unavailable" {
		t.Errorf("events %+v: want the five stored, newest first, with their details", got.Events)
	}
	answersAsDocumented(t, s, "/api/v1/events?"+rng, "/paths/~1api~1v1~1events/get/responses/200/content/application~1json/schema")

	code, page := pageOf(t, s, "/target?"+rng)
	if code != 200 {
		t.Fatalf("target page: %d %s", code, page)
	}
	page = html.UnescapeString(page)
	rss, _, _ := strings.Cut(page, `data-metric="heap_after_gc"`)
	if n := strings.Count(rss, `<rect class="band"`); n != 2 {
		t.Errorf("the RSS chart shades %d outages, want 2", n)
	}
	for _, want := range []string{"down since " + ago(10).Format("2006-01-02 15:04Z"), "down from " + ago(28).Format("2006-01-02 15:04Z") + " to " + ago(25).Format("2006-01-02 15:04Z"),
		"restarted (pid 10 → 11)", "OOM kill (oom_kill 0 → 1)", "down: 503 Service Unavailable", "up again: captured again"} {
		if !strings.Contains(page, want) {
			t.Errorf("target page: no %q", want)
		}
	}

	var targets struct{ Targets []server.Target }
	decode(t, s, "/api/v1/targets", 200, &targets)
	if len(targets.Targets) != 1 || targets.Targets[0].Health != problem.HealthDown ||
		!strings.HasPrefix(targets.Targets[0].Status.Reasons[0], "down since "+ago(10).Format(time.RFC3339)+": 503 Service Unavailable") {
		t.Errorf("targets %+v: want it down since its last outage", targets.Targets)
	}
}

// freshStore is an empty embedded store, closed when the test ends.
func freshStore(t *testing.T) *store.Embedded {
	t.Helper()
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// answersAsDocumented fails the test when GET path's answer is not what
// the OpenAPI document's schema at pointer says.
func answersAsDocumented(t *testing.T, s *server.Server, path, pointer string) {
	t.Helper()
	_, schema := openAPISchemas(t)
	resp := get(t, s, path)
	body, _ := io.ReadAll(resp.Body)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema(pointer).Validate(v); err != nil {
		t.Errorf("GET %s is not what the document says: %v\n%s", path, err, body)
	}
}
