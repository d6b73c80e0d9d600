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
