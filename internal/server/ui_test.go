package server_test

import (
	"fmt"
	"html"
	"io"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/humanize"
	"github.com/heapscope/heapscope/internal/server"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/storetest"
)

func TestUI_pages(t *testing.T) {
	f := filledStore(t)
	s := newServer(t, server.Options{})
	target := url.QueryEscape(f.target)
	// The pages draw what the store holds: as many points as its series.
	rss, err := f.st.Series(f.target, "rss", time.Time{}, time.Time{})
	if err != nil || len(rss) == 0 {
		t.Fatalf("rss series %v, %v", rss, err)
	}
	points := fmt.Sprintf("%d points", len(rss))
	dataPoints := fmt.Sprintf(`data-points="%d"`, len(rss))
	tests := []struct {
		name, path string
		want       []string
	}{
		{"targets", "/", []string{`<a href="/target?target=` + target + `">`, `class="health down"`, `OOM-killed after its last capture`, `aria-label="` + points + `"`}},
		{"target", "/target?target=" + target + "&from=" + url.QueryEscape(f.runs[1].Time.Add(-60e9).Format("2006-01-02T15:04:05Z07:00")),
			[]string{`<figure class="timeline" data-metric="rss"`, `data-metric="heap_after_gc"`, dataPoints, "memory&gt;=80% fired at 83.5",
				"OOM kill; the last capture before it:", `href="/run/` + f.bundle.Path + `/"`}},
		{"findings", "/findings?min=info", []string{`<table class="findings-feed"`, `href="/target?target=` + target + `"`}},
		{"a run", "/run/" + f.runs[0].Path + "/", []string{`href="pprof/heap-000/"`, `href="flamegraph/heap-000"`}},
		{"a bundle", "/run/" + f.bundle.Path + "/", []string{"<h1>Bundle of " + f.target + ": memory&gt;=80% fired at 83.5</h1>",
			"the last capture before an OOM kill", `<h2>Verdict</h2>`}},
		{"the run's flame graph", "/run/" + f.runs[0].Path + "/flamegraph/heap-000", []string{`class="hsflame"`}},
		{"the script", "/static/app.js", []string{"figure.timeline"}},
		{"a comparison", "/compare?target=" + target + "&base_from=" + url.QueryEscape(f.runs[1].Time.Add(-60e9).Format(time.RFC3339)) +
			"&base_to=" + url.QueryEscape(f.runs[0].Time.Format(time.RFC3339Nano)) + "&from=" + url.QueryEscape(f.runs[0].Time.Format(time.RFC3339Nano)) +
			"&to=" + url.QueryEscape(f.runs[0].Time.Add(60e9).Format(time.RFC3339)), []string{`<table id="figures">`, "One run per side"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := pageOf(t, s, tt.path)
			if status != 200 {
				t.Fatalf("GET %s: %d %s", tt.path, status, body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s: no %q in the page", tt.path, w)
				}
			}
			if strings.HasSuffix(tt.path, ".js") || strings.HasPrefix(tt.path, "/run/") || strings.HasPrefix(tt.path, "/compare") {
				return
			}
			if regexp.MustCompile(`<script>|<script [^>]*>[^<]`).MatchString(body) || regexp.MustCompile(` on[a-z]+="`).MatchString(body) {
				t.Errorf("GET %s: the page has inline script, which the CSP refuses", tt.path)
			}
		})
	}
}

func TestUI_runPagesOnlyOfIndexedRuns(t *testing.T) {
	f := filledStore(t)
	s := newServer(t, server.Options{})
	for _, path := range []string{
		"/run/runs/none/20261128T000000Z/",
		"/run/" + f.runs[0].Path + "/../../../../../etc/passwd",
		"/run/..%2F..%2F..%2Fetc/passwd/x/",
		"/run/" + f.runs[0].Path + "/run/..%2F..%2F..%2F..%2Fstore.db",
		"/run/" + f.runs[0].Path + "/run/%2E%2E/%2E%2E/%2E%2E/index.db",
		"/run/runs/",
		// pprof's source and disassembly views read the files a profile
		// names: a watched service could name /etc/passwd.
		"/run/" + f.runs[0].Path + "/pprof/heap-000/source?f=.",
		"/run/" + f.runs[0].Path + "/pprof/heap-000/disasm?f=.",
		"/static/",
		"/static/../ui.go",
		"/static/..%2F..%2Fserver.go",
		"/static/%2e%2e/layout.html",
		"/merged/..%2F..%2Fetc/passwd",
	} {
		status, body := pageOf(t, s, path)
		if status == 200 || strings.Contains(body, "root:") || strings.Contains(body, "SQLite") {
			t.Errorf("GET %s: %d %.80q: want it refused", path, status, body)
		}
	}
	if status, _ := pageOf(t, s, "/target"); status != 400 {
		t.Errorf("target page without target: %d, want 400", status)
	}
}

// TestUI_inlineScriptsOnlyWithTheAnswersNonce opens the pages whose
// renderers write inline scripts (a stored run's report and flame graph,
// pprof's UI, a range's flame graph): every script carries the nonce the
// answer's policy allows, the policy allows no other inline script, and
// the nonce is new with each answer.
func TestUI_inlineScriptsOnlyWithTheAnswersNonce(t *testing.T) {
	f := filledStore(t)
	s := newServer(t, server.Options{})
	rng := "target=" + url.QueryEscape(f.target) + "&from=" + url.QueryEscape(f.runs[1].Time.Add(-time.Minute).Format(time.RFC3339)) +
		"&to=" + url.QueryEscape(f.runs[0].Time.Add(time.Minute).Format(time.RFC3339))
	nonceOf := regexp.MustCompile(`script-src 'self' 'nonce-([A-Za-z0-9_-]{20,})';`)
	seen := map[string]bool{}
	for _, path := range []string{
		"/run/" + f.runs[0].Path + "/report",
		"/run/" + f.runs[0].Path + "/flamegraph/heap-000",
		"/run/" + f.runs[0].Path + "/pprof/heap-000/flamegraph",
		"/flame?type=heap&" + rng,
		"/flame?type=heap&" + rng,
	} {
		resp := get(t, s, path)
		body, _ := io.ReadAll(resp.Body)
		csp := resp.Header.Get("Content-Security-Policy")
		m := nonceOf.FindStringSubmatch(csp)
		if resp.StatusCode != 200 || m == nil || strings.Contains(csp, "script-src 'self' 'unsafe-inline'") {
			t.Errorf("GET %s: %d, policy %q: want a nonce and no unsafe-inline script", path, resp.StatusCode, csp)
			continue
		}
		if seen[m[1]] {
			t.Errorf("GET %s: nonce %s given before", path, m[1])
		}
		seen[m[1]] = true
		scripts := regexp.MustCompile(`<script[^>]*>`).FindAllString(string(body), -1)
		if len(scripts) == 0 && !strings.HasSuffix(path, "/report") {
			t.Errorf("GET %s: no script: the page is not what it was", path)
		}
		for _, tag := range scripts {
			if !strings.Contains(tag, `nonce="`+m[1]+`"`) {
				t.Errorf("GET %s: %s without the answer's nonce", path, tag)
			}
		}
	}
	// Answers that are not HTML pass as they are.
	resp := get(t, s, "/run/"+f.runs[0].Path+"/run/result.json.gz")
	if resp.StatusCode != 200 || strings.Contains(resp.Header.Get("Content-Security-Policy"), "nonce") {
		t.Errorf("a run's file: %d, policy %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
}

// TestUI_targetPageDrawsTheLimit: captures of a service whose cgroup
// limits it to 256 MiB, and a bundle its memory>=80% trigger fired: the
// RSS chart draws the limit and the trigger's threshold, 80 % of it, and
// the other charts draw neither.
func TestUI_targetPageDrawsTheLimit(t *testing.T) {
	st := freshStore(t)
	const target = "http://127.0.0.1:6060/debug/pprof/"
	limit := storetest.Fixture(t, storetest.Leaky).RSS.Cgroup.LimitBytes
	if limit == 0 {
		t.Fatal("the fixture has no memory limit")
	}
	for _, min := range []int{0, 10} {
		storetest.Commit(t, st, store.KindRun, target, storetest.Leaky, store.Entry{Time: storetest.At(min), Scheduled: true})
	}
	storetest.Commit(t, st, store.KindBundle, target, storetest.Leaky, store.Entry{Time: storetest.At(15),
		Trigger: &store.Trigger{Expr: "memory>=80%", Value: 83.5, Threshold: 80, Unit: "percent"}})
	s := newServer(t, server.Options{Store: st})
	code, page := pageOf(t, s, "/target?target="+url.QueryEscape(target)+"&from="+url.QueryEscape(storetest.At(-5).Format(time.RFC3339))+
		"&to="+url.QueryEscape(storetest.At(25).Format(time.RFC3339)))
	if code != 200 {
		t.Fatalf("target page: %d %s", code, page)
	}
	page = html.UnescapeString(page)
	rss, rest, ok := strings.Cut(page, `data-metric="heap_after_gc"`)
	if !ok {
		t.Fatal("no heap chart")
	}
	for _, want := range []string{"memory limit " + humanize.Bytes(float64(limit)), "trigger memory>=80%: " + humanize.Bytes(0.8*float64(limit))} {
		if !strings.Contains(rss, want) {
			t.Errorf("the RSS chart does not draw %q", want)
		}
		if strings.Contains(rest, want) {
			t.Errorf("a chart other than RSS draws %q", want)
		}
	}
}
