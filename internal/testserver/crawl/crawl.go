// Package crawl follows every same-origin link of a web UI from its first
// page, as a person clicking through it would, and says which links fail
// and where each was found: the tests of heapscope's pages hold with it
// that no page links to a 404, and that every page reads well.
//
// Links are the href and src attributes of HTML answers (scripts' text
// left out: what a script builds is the script's test's). A link is
// followed once: by its URL, or by the key Options.Key gives it, so that
// a UI whose links only change a view's query (pprof's) is walked
// without following each variant.
package crawl

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// DefaultMax is the most URLs a crawl fetches unless told otherwise.
const DefaultMax = 2000

// Options tune a crawl.
type Options struct {
	// Seeds are more paths to start from, beside the first page: pages
	// that only a script links to.
	Seeds []string
	// Max bounds the URLs fetched; DefaultMax when 0.
	Max int
	// Key, when set, gives the key a URL is visited under: URLs of one
	// key are fetched once. The whole URL when nil or "".
	Key func(u *url.URL) string
	// Skip, when set, leaves the links it reports true for unfollowed:
	// pages another crawl already covers, and slow ones.
	Skip func(u *url.URL) bool
	// MaxBody bounds the bytes read of an answer; 64 MiB when 0.
	MaxBody int64
}

// Page is an answer the crawl fetched.
type Page struct {
	// URL is the page's, path and query; From the page that linked it
	// first ("" for the start and the seeds).
	URL, From   string
	Status      int
	ContentType string
	// Body is the answer's, when HTML.
	Body string
	// Elapsed is the time from the request to the body's end.
	Elapsed time.Duration
}

// HTML reports whether the page is an HTML document.
func (p Page) HTML() bool { return strings.HasPrefix(p.ContentType, "text/html") }

// Result is what a crawl found.
type Result struct {
	// Pages are the answers, in the order fetched.
	Pages []Page
	// Truncated says Max was reached with links left to follow.
	Truncated bool
}

// Broken lists the pages answered with a status of 400 or more, each as
// "GET URL: STATUS, linked from FROM".
func (r Result) Broken() []string {
	var out []string
	for _, p := range r.Pages {
		if p.Status >= 400 {
			from := p.From
			if from == "" {
				from = "the crawl's start"
			}
			out = append(out, fmt.Sprintf("GET %s: %d %.120q, linked from %s", p.URL, p.Status, p.Body, from))
		}
	}
	return out
}

// Faults lists what no crawl of a UI should find, one line each: the
// crawl cut short at Max, every broken page (Broken), and a raw float in
// an HTML page's text ("2.464e+07": a figure not formatted for people).
func (r Result) Faults() []string {
	var out []string
	if r.Truncated {
		out = append(out, fmt.Sprintf("more than %d URLs: the crawl stopped", len(r.Pages)))
	}
	out = append(out, r.Broken()...)
	for _, p := range r.Pages {
		if !p.HTML() || p.Status != http.StatusOK {
			continue
		}
		text := Text(p.Body)
		if loc := rawFloat.FindStringIndex(text); loc != nil {
			out = append(out, fmt.Sprintf("GET %s: raw float %s in %q", p.URL, text[loc[0]:loc[1]], text[max(0, loc[0]-80):min(len(text), loc[1]+40)]))
		}
	}
	return out
}

var (
	// rawFloat is a float as %v or %g write it past a million.
	rawFloat = regexp.MustCompile(`\d\.\d+e[+-]\d\d`)
	linkAttr = regexp.MustCompile(`(?i)\s(?:href|src)\s*=\s*(?:"([^"]*)"|'([^']*)')`)
	script   = regexp.MustCompile(`(?is)<script\b[^>]*>.*?</script>`)
)

// Links returns the href and src values of an HTML document, outside its
// scripts, unescaped.
func Links(body string) []string {
	var out []string
	for _, m := range linkAttr.FindAllStringSubmatch(script.ReplaceAllString(body, ""), -1) {
		out = append(out, html.UnescapeString(m[1]+m[2]))
	}
	return out
}

// Text returns an HTML document without its scripts: what it shows, and
// its markup.
func Text(body string) string { return script.ReplaceAllString(body, "") }

// Site crawls the site at base (scheme and host, such as an httptest
// server's URL) from its page "/" and the seeds, with client.
func Site(client *http.Client, base string, opts Options) (Result, error) {
	root, err := url.Parse(base)
	if err != nil {
		return Result{}, fmt.Errorf("crawl %s: %w", base, err)
	}
	if opts.Max <= 0 {
		opts.Max = DefaultMax
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = 64 << 20
	}
	type link struct {
		u    *url.URL
		from string
	}
	var (
		queue []link
		seen  = map[string]bool{}
		res   Result
	)
	add := func(u *url.URL, from string) {
		if u.Scheme != root.Scheme || u.Host != root.Host {
			return
		}
		u.Fragment, u.RawFragment = "", ""
		if opts.Skip != nil && opts.Skip(u) {
			return
		}
		key := ""
		if opts.Key != nil {
			key = opts.Key(u)
		}
		if key == "" {
			key = u.RequestURI()
		}
		if seen[key] {
			return
		}
		seen[key] = true
		queue = append(queue, link{u, from})
	}
	for _, p := range append([]string{"/"}, opts.Seeds...) {
		u, err := root.Parse(p)
		if err != nil {
			return Result{}, fmt.Errorf("crawl %s: seed %q: %w", base, p, err)
		}
		add(u, "")
	}
	for len(queue) > 0 {
		if len(res.Pages) >= opts.Max {
			res.Truncated = true
			break
		}
		l := queue[0]
		queue = queue[1:]
		start := time.Now()
		resp, err := client.Get(l.u.String())
		if err != nil {
			return res, fmt.Errorf("crawl: GET %s (linked from %s): %w", l.u.RequestURI(), l.from, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, opts.MaxBody))
		resp.Body.Close()
		if err != nil {
			return res, fmt.Errorf("crawl: GET %s: %w", l.u.RequestURI(), err)
		}
		p := Page{URL: l.u.RequestURI(), From: l.from, Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Elapsed: time.Since(start)}
		// Errors keep their text, to be said.
		if p.HTML() || p.Status >= 400 {
			p.Body = string(body)
		}
		res.Pages = append(res.Pages, p)
		if !p.HTML() || p.Status >= 400 {
			continue
		}
		// The page's own URL after redirects is what its links are
		// relative to.
		at := resp.Request.URL
		for _, href := range Links(p.Body) {
			if href == "" || strings.HasPrefix(href, "#") {
				continue
			}
			u, err := at.Parse(href)
			if err != nil {
				res.Pages = append(res.Pages, Page{URL: href, From: p.URL, Status: 999, Body: err.Error()})
				continue
			}
			add(u, p.URL)
		}
	}
	return res, nil
}
