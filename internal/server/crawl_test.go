package server_test

import (
	"context"
	"fmt"
	"html"
	"io/fs"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heapscope/heapscope/examples"
	"github.com/heapscope/heapscope/internal/load"
	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rundir"
	"github.com/heapscope/heapscope/internal/server"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/testserver/crawl"
	"github.com/heapscope/heapscope/internal/trigger"
	"github.com/heapscope/heapscope/internal/watch"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// watched is a store filled by a real watch of the leaky example under
// load: scheduled runs, then a trigger's bundle with its comparison
// with the last of them.
type watched struct {
	st      *store.Embedded
	target  string
	runs    []store.Entry
	bundle  store.Entry
	trigger string
}

var (
	watchOnce sync.Once
	watchFill watched
	watchErr  error
)

// watchedStore returns the store of a real watch, made once for the
// package's tests.
func watchedStore(t *testing.T) watched {
	t.Helper()
	watchOnce.Do(func() { watchFill, watchErr = makeWatchedStore() })
	if watchErr != nil {
		t.Fatal(watchErr)
	}
	return watchFill
}

// closeWatchedStore removes the store watchedStore made, if any.
func closeWatchedStore() {
	if watchFill.st != nil {
		watchFill.st.Close()
		os.RemoveAll(filepath.Dir(watchFill.st.Dir()))
	}
}

func makeWatchedStore() (_ watched, err error) {
	dir, err := os.MkdirTemp("", "heapscope-server-crawl-")
	if err != nil {
		return watched{}, err
	}
	var st *store.Embedded
	defer func() {
		if err != nil {
			if st != nil {
				st.Close()
			}
			os.RemoveAll(dir)
		}
	}()
	os.Setenv(exampleEnv, "leaky")
	svc, err := examples.Start(context.Background(), "leaky", os.Args[0], "-addr", "127.0.0.1:0")
	os.Unsetenv(exampleEnv)
	if err != nil {
		return watched{}, err
	}
	defer svc.Stop()
	// Load all along, so that the captures find the leak.
	method, path := examples.DefaultLoad("leaky")
	stopLoad := make(chan struct{})
	loaded := make(chan error, 1)
	go func() {
		_, err := load.Run(context.Background(), load.Options{Targets: []load.Request{{Method: method, URL: svc.URL + path}},
			Rate: 300, Duration: 5 * time.Minute, Stop: stopLoad})
		loaded <- err
	}()
	defer func() { close(stopLoad); <-loaded }()

	st, err = store.Open(filepath.Join(dir, "store"))
	if err != nil {
		return watched{}, err
	}
	const expr = "rss>=1MiB"
	cfg, err := config.ForURLs([]string{svc.URL}, config.Settings{Every: time.Hour, Window: time.Second, Poll: 200 * time.Millisecond,
		Triggers: []config.Trigger{{Expr: expr, Cooldown: time.Hour}}})
	if err != nil {
		return watched{}, err
	}
	w, err := watch.New(watch.Options{Config: cfg, Store: st, Version: "test", BundleWindow: time.Second})
	if err != nil {
		return watched{}, err
	}
	for range 2 {
		if err := w.Once(context.Background()); err != nil {
			return watched{}, err
		}
	}
	// A watcher of its own: Once's targets are not run's.
	if w, err = watch.New(watch.Options{Config: cfg, Store: st, Version: "test", BundleWindow: time.Second}); err != nil {
		return watched{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	var h store.History
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if h, err = st.History(store.Query{}); err != nil || len(h.Bundles) > 0 {
			break
		}
	}
	cancel()
	<-ran
	if err != nil {
		return watched{}, err
	}
	if len(h.Bundles) == 0 || len(h.Runs) < 2 {
		return watched{}, fmt.Errorf("watch stored %d runs and %d bundles, want 2 and a bundle of %s", len(h.Runs), len(h.Bundles), expr)
	}
	return watched{st: st, target: h.Runs[0].Target, runs: h.Runs, bundle: h.Bundles[0], trigger: expr}, nil
}

// crawlKey visits pprof's UI once per view: its links only change the
// view's query.
func crawlKey(u *url.URL) string {
	if strings.Contains(u.Path, "/pprof/") || strings.HasPrefix(u.Path, "/merged/") {
		return u.Path
	}
	return ""
}

// TestUI_everyLinkWorks crawls the pages of a real watch's store from
// the targets page: every link answers, every kind of page is reached,
// and no page writes a raw float.
func TestUI_everyLinkWorks(t *testing.T) {
	f := watchedStore(t)
	s := newServer(t, server.Options{Store: f.st})
	ts := httptest.NewServer(s)
	defer ts.Close()
	rng := "target=" + url.QueryEscape(f.target) + "&from=" + url.QueryEscape(f.runs[len(f.runs)-1].Time.Add(-time.Minute).Format(time.RFC3339)) +
		"&to=" + url.QueryEscape(f.bundle.Time.Add(time.Minute).Format(time.RFC3339))
	res, err := crawl.Site(ts.Client(), ts.URL, crawl.Options{Key: crawlKey, Seeds: []string{
		// What the target page's script links to.
		"/flame?type=heap&" + rng,
		"/merged?type=heap&" + rng,
		"/compare?" + rng + "&base_from=" + url.QueryEscape(f.runs[len(f.runs)-1].Time.Add(-time.Minute).Format(time.RFC3339)) +
			"&base_to=" + url.QueryEscape(f.runs[0].Time.Format(time.RFC3339Nano)),
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Faults() {
		t.Error(f)
	}
	kinds := map[string]*regexp.Regexp{
		"targets":         regexp.MustCompile(`^/$`),
		"target":          regexp.MustCompile(`^/target\?target=`),
		"findings":        regexp.MustCompile(`^/findings`),
		"problems":        regexp.MustCompile(`^/api/v1/problems\?target=`),
		"a run":           regexp.MustCompile(`^/run/runs/[^/]+/[^/]+/$`),
		"a bundle":        regexp.MustCompile(`^/run/bundles/[^/]+/[^/]+/$`),
		"a run's report":  regexp.MustCompile(`^/run/runs/.*/report$`),
		"a flame graph":   regexp.MustCompile(`/flamegraph/`),
		"pprof's UI":      regexp.MustCompile(`/pprof/[^/]+/`),
		"a profile":       regexp.MustCompile(`^/run/.*/run/profiles/.*\.pb\.gz$`),
		"a bundle's file": regexp.MustCompile(`^/run/bundles/.*/run/goroutines\.txt$`),
		"the comparison":  regexp.MustCompile(`^/run/bundles/.*/run/compare\.md$`),
	}
	for name, re := range kinds {
		found := false
		for _, p := range res.Pages {
			found = found || re.MatchString(p.URL)
		}
		if !found {
			t.Errorf("no page of %s (%s) reached from /", name, re)
		}
	}
	t.Logf("%d URLs crawled", len(res.Pages))
}

// TestUI_bundlePageLeadsWithTheAnswer opens the page of a real trigger's
// bundle: it says whose bundle it is and what fired it, whether it is
// complete and what it lacks, its findings (the most severe first), its
// comparison with the last healthy run by the stored run's path, and
// links to every file of the bundle.
func TestUI_bundlePageLeadsWithTheAnswer(t *testing.T) {
	f := watchedStore(t)
	s := newServer(t, server.Options{Store: f.st})
	status, body := pageOf(t, s, "/run/"+f.bundle.Path+"/")
	if status != 200 {
		t.Fatalf("bundle page: %d %s", status, body)
	}
	dir, err := f.st.RunDir(context.Background(), f.bundle)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rundir.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The page compared as it reads.
	body = html.UnescapeString(body)
	esc := func(s string) string { return s }
	title := "Bundle of " + f.target + ": " + f.trigger + " fired at " + trigger.FormatValue(f.bundle.Trigger.Value, f.bundle.Trigger.Unit)
	want := []string{"<title>" + esc(title) + "</title>", `<p id="status" class="status-` + string(r.Status) + `">`}
	for _, fl := range r.Failures {
		want = append(want, esc(fl.Error))
	}
	if missing, err := os.ReadFile(filepath.Join(dir, "missing.txt")); err == nil {
		for l := range strings.Lines(string(missing)) {
			want = append(want, esc(strings.TrimSpace(l)))
		}
	}
	// The verdict: every finding, the most severe first, with its
	// symptoms.
	if len(r.Findings) == 0 {
		want = append(want, "No finding")
	}
	byRank := slices.Clone(r.Findings)
	slices.SortStableFunc(byRank, func(a, b result.Finding) int { return problem.Rank(b.Severity) - problem.Rank(a.Severity) })
	last := 0
	for _, fd := range byRank {
		want = append(want, esc(fd.Title))
		for _, sy := range fd.Symptoms {
			want = append(want, esc(sy.Title))
		}
		i := strings.Index(body, `<td>`+esc(fd.Title))
		if i < last {
			t.Errorf("finding %q (%s) before a more severe one", fd.Title, fd.Severity)
		}
		last = i
	}
	// The comparison names the stored run it compares with, nothing of
	// a temporary directory.
	compareMD, err := os.ReadFile(filepath.Join(dir, "compare.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(compareMD), f.runs[0].Path) || strings.Contains(string(compareMD), os.TempDir()) {
		t.Errorf("compare.md names no %s, or a temporary directory:\n%s", f.runs[0].Path, compareMD)
	}
	want = append(want, `<pre id="comparison">`, esc(f.runs[0].Path))
	// Every file, linked.
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, path)
			want = append(want, `href="run/`+filepath.ToSlash(rel)+`"`)
		}
		return nil
	})
	for _, name := range []string{"goroutines.txt", "compare.md", "compare.json"} {
		want = append(want, `href="run/`+name+`"`)
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("bundle page: no %q", w)
		}
	}
	// The answer comes before the means: status, verdict and comparison
	// before the profiles.
	order := []string{`id="status"`, "<h2>Verdict</h2>", `id="comparison"`, `id="profiles"`, `id="files"`}
	for i := 1; i < len(order); i++ {
		if strings.Index(body, order[i-1]) > strings.Index(body, order[i]) {
			t.Errorf("bundle page: %s after %s", order[i-1], order[i])
		}
	}
	if t.Failed() {
		t.Logf("the page:\n%s", body)
	}
}
