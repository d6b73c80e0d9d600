package crawl

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestSite_namesTheBrokenLinksAndWhereTheyAre serves a small site with a
// broken link, a link only a script holds, an outside link, and a view
// whose links only change its query.
func TestSite_namesTheBrokenLinksAndWhereTheyAre(t *testing.T) {
	mux := http.NewServeMux()
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte(body))
		}
	}
	mux.HandleFunc("/{$}", page(`<a href="a/">a</a> <a href='https://example.com/'>out</a> <img src="/img.png">
<script>document.write('<a href="/script-only">x</a>')</script> <a href="#top">top</a>`))
	mux.HandleFunc("/a/", page(`<a href="b?x=1&amp;y=2">b</a> <a href="../view?q=1">v</a> <a href="../missing">m</a>`))
	mux.HandleFunc("/a/b", page(`ok`))
	mux.HandleFunc("/view", page(`<a href="view?q=2">next</a> <a href="view?q=3">next</a>`))
	mux.HandleFunc("/img.png", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("\x89PNG")) })
	mux.HandleFunc("/script-only", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "nope", 500) })
	ts := httptest.NewServer(mux)
	defer ts.Close()

	res, err := Site(ts.Client(), ts.URL, Options{Key: func(u *url.URL) string {
		if u.Path == "/view" {
			return u.Path
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, p := range res.Pages {
		urls = append(urls, p.URL)
	}
	want := []string{"/", "/a/", "/img.png", "/a/b?x=1&y=2", "/view?q=1", "/missing"}
	if !slices.Equal(urls, want) {
		t.Errorf("crawled %q, want %q", urls, want)
	}
	broken := res.Broken()
	if len(broken) != 1 || !strings.Contains(broken[0], "GET /missing: 404") || !strings.HasSuffix(broken[0], "linked from /a/") {
		t.Errorf("broken %q, want /missing, linked from /a/", broken)
	}
	if res.Truncated {
		t.Error("truncated, with no bound reached")
	}
	skip := func(u *url.URL) bool { return u.Path == "/a/" }
	if res, _ := Site(ts.Client(), ts.URL, Options{Skip: skip}); len(res.Pages) != 2 || len(res.Broken()) != 0 {
		t.Errorf("skipping /a/: %+v, want / and /img.png alone", res.Pages)
	}
	if res, _ := Site(ts.Client(), ts.URL, Options{Max: 2}); !res.Truncated || len(res.Pages) != 2 {
		t.Errorf("Max 2: %d pages, truncated %v; want 2 and truncated", len(res.Pages), res.Truncated)
	}
}

// TestResult_Faults: a crawl cut short, a broken page and a raw float in
// an HTML page's text are faults; a float in a script or in a JSON
// answer is not.
func TestResult_Faults(t *testing.T) {
	html := func(url, body string) Page {
		return Page{URL: url, Status: 200, ContentType: "text/html; charset=utf-8", Body: body}
	}
	res := Result{Truncated: true, Pages: []Page{
		html("/", `<p>RSS 23.5 MiB</p><script>const rss = 2.464e+07;</script>`),
		html("/target", `<td>2.464e+07</td>`),
		{URL: "/api", Status: 200, ContentType: "application/json", Body: `{"rss": 2.464e+07}`},
		{URL: "/gone", Status: 404, From: "/target", Body: "404 page not found"},
	}}
	faults := res.Faults()
	if len(faults) != 3 || !strings.Contains(faults[0], "the crawl stopped") || !strings.Contains(faults[1], "GET /gone: 404") ||
		!strings.Contains(faults[2], "GET /target: raw float 2.464e+07") {
		t.Errorf("faults %q: want the crawl cut short, /gone, and the float of /target", faults)
	}
	if f := (Result{Pages: res.Pages[:1]}).Faults(); len(f) != 0 {
		t.Errorf("faults of a sound page: %q", f)
	}
}
