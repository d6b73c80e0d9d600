package kvtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/heapscope/heapscope/examples/internal/kv"
)

// step is one request of a handler test case and what must come back.
type step struct {
	method   string
	target   string
	body     string
	wantCode int
	wantJSON map[string]any // decoded body; nil for none
	wantText string         // a plain-text body, from the router; "" for none
	wantHdr  map[string]string
}

// routeCase is a named sequence of requests to one fresh handler.
type routeCase struct {
	name  string
	steps []step
}

// JSONCase is a string that exercises a branch of JSON string escaping.
type JSONCase struct {
	Name string
	Text string
}

// JSONCases returns strings that, between them, exercise every branch of
// JSON string escaping.
func JSONCases() []JSONCase {
	return []JSONCase{
		{"quotes", `say "hi"`},
		{"backslashes", `C:\dir\file \\ \"`},
		{"control characters", "nul\x00 bell\x07 bs\b ff\f nl\n cr\r tab\t esc\x1b unit\x1f del\x7f"},
		{"html", "<script>a && b</script>"},
		{"non-ascii", "héllo wörld — 日本語 🎉"},
		{"line separators", "a\u2028b\u2029c"},
		{"invalid utf-8", "bad \xff\xfe byte, cut \xe2\x82 rune"},
		{"empty", ""},
	}
}

// TestHandler checks the routes of a handler made by newStore and newHandler,
// each case against a fresh handler over a store of three preloaded keys:
// answers to GET, PUT and other methods, the limits on keys and values, the
// router's own 404s, JSON escaping of every kind of key and value, the
// request counters, and concurrent puts and gets.
func TestHandler[S any](t *testing.T, newStore func(preload int) (S, error), newHandler func(S) http.Handler) {
	big := strings.Repeat("v", kv.MaxValueLen)
	longKey := strings.Repeat("k", kv.MaxKeyLen)
	notFound := "404 page not found\n"
	tests := []routeCase{
		{name: "get preloaded", steps: []step{
			{method: "GET", target: "/kv/key-2", wantCode: 200, wantJSON: map[string]any{"key": "key-2", "value": kv.PreloadValue(2)}},
		}},
		{name: "get missing", steps: []step{
			{method: "GET", target: "/kv/key-3", wantCode: 404, wantJSON: map[string]any{"error": "key not found", "key": "key-3"}},
		}},
		{name: "put then get", steps: []step{
			{method: "PUT", target: "/kv/fresh", body: "hello", wantCode: 204},
			{method: "GET", target: "/kv/fresh", wantCode: 200, wantJSON: map[string]any{"key": "fresh", "value": "hello"}},
		}},
		{name: "put overwrites", steps: []step{
			{method: "PUT", target: "/kv/key-0", body: "new", wantCode: 204},
			{method: "GET", target: "/kv/key-0", wantCode: 200, wantJSON: map[string]any{"key": "key-0", "value": "new"}},
		}},
		{name: "empty value", steps: []step{
			{method: "PUT", target: "/kv/e", wantCode: 204},
			{method: "GET", target: "/kv/e", wantCode: 200, wantJSON: map[string]any{"key": "e", "value": ""}},
		}},
		{name: "escaped slash in key", steps: []step{
			{method: "PUT", target: "/kv/a%2Fb", body: "x", wantCode: 204},
			{method: "GET", target: "/kv/a%2Fb", wantCode: 200, wantJSON: map[string]any{"key": "a/b", "value": "x"}},
		}},
		{name: "largest value", steps: []step{
			{method: "PUT", target: "/kv/big", body: big, wantCode: 204},
			{method: "GET", target: "/kv/big", wantCode: 200, wantJSON: map[string]any{"key": "big", "value": big}},
		}},
		{name: "value too large", steps: []step{
			{method: "PUT", target: "/kv/big", body: big + "v", wantCode: 413, wantJSON: map[string]any{"error": "value longer than 65536 bytes"}},
			{method: "GET", target: "/kv/big", wantCode: 404, wantJSON: map[string]any{"error": "key not found", "key": "big"}},
		}},
		{name: "longest key", steps: []step{
			{method: "PUT", target: "/kv/" + longKey, body: "x", wantCode: 204},
			{method: "GET", target: "/kv/" + longKey, wantCode: 200, wantJSON: map[string]any{"key": longKey, "value": "x"}},
		}},
		{name: "key too long", steps: []step{
			{method: "GET", target: "/kv/" + longKey + "k", wantCode: 400, wantJSON: map[string]any{"error": "key longer than 256 bytes"}},
			{method: "PUT", target: "/kv/" + longKey + "k", body: "x", wantCode: 400, wantJSON: map[string]any{"error": "key longer than 256 bytes"}},
		}},
		{name: "wrong method", steps: []step{
			{method: "POST", target: "/kv/key-1", body: "x", wantCode: 405, wantHdr: map[string]string{"Allow": "GET, PUT"},
				wantJSON: map[string]any{"error": "method not allowed: use GET or PUT"}},
			{method: "DELETE", target: "/kv/key-1", wantCode: 405, wantJSON: map[string]any{"error": "method not allowed: use GET or PUT"}},
			{method: "PUT", target: "/stats", wantCode: 405, wantHdr: map[string]string{"Allow": "GET"},
				wantJSON: map[string]any{"error": "method not allowed: use GET"}},
		}},
		{name: "stats", steps: []step{
			{method: "GET", target: "/kv/key-1", wantCode: 200, wantJSON: map[string]any{"key": "key-1", "value": kv.PreloadValue(1)}},
			{method: "GET", target: "/kv/nope", wantCode: 404, wantJSON: map[string]any{"error": "key not found", "key": "nope"}},
			{method: "PUT", target: "/kv/n", body: "1", wantCode: 204},
			{method: "POST", target: "/kv/n", wantCode: 405, wantJSON: map[string]any{"error": "method not allowed: use GET or PUT"}},
			{method: "GET", target: "/stats", wantCode: 200, wantJSON: map[string]any{
				"gets": 2, "hits": 1, "misses": 1, "puts": 1, "rejected": 1, "requests": 5}},
		}},
		{name: "empty key not found", steps: []step{
			{method: "GET", target: "/kv/", wantCode: 404, wantText: notFound},
		}},
		{name: "key with slash not found", steps: []step{
			{method: "GET", target: "/kv/a/b", wantCode: 404, wantText: notFound},
		}},
		{name: "other path not found", steps: []step{
			{method: "GET", target: "/other", wantCode: 404, wantText: notFound},
		}},
	}
	for _, tc := range JSONCases() {
		for _, part := range []string{"key", "value"} {
			key, value := "k-"+part+"-"+tc.Name, tc.Text
			if part == "key" {
				key, value = "k"+tc.Text, "v"
			}
			target := "/kv/" + url.PathEscape(key)
			tests = append(tests, routeCase{name: "json escaping of " + tc.Name + " in " + part, steps: []step{
				{method: "PUT", target: target, body: value, wantCode: 204},
				{method: "GET", target: target, wantCode: 200, wantJSON: map[string]any{"key": utf8Valid(key), "value": utf8Valid(value)}},
			}})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHandler(t, 3, newStore, newHandler)
			for _, st := range tt.steps {
				check(t, do(t, h, st.method, st.target, st.body), st)
			}
		})
	}
	t.Run("concurrent puts and gets", func(t *testing.T) {
		testConcurrentPutGet(t, NewHandler(t, 100, newStore, newHandler))
	})
}

func testConcurrentPutGet(t *testing.T, h http.Handler) {
	const goroutines, rounds = 8, 100
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range rounds {
				key := kv.Key((g*13 + i) % 100)
				if i%4 == 0 {
					if rec := do(t, h, "PUT", "/kv/"+key, "g"+strconv.Itoa(g)); rec.Code != http.StatusNoContent {
						t.Errorf("PUT %s: status %d", key, rec.Code)
						return
					}
					continue
				}
				rec := do(t, h, "GET", "/kv/"+key, "")
				var got struct{ Key, Value string }
				if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil || got.Key != key {
					t.Errorf("GET %s: %d %q", key, rec.Code, rec.Body.String())
					return
				}
			}
		})
	}
	wg.Wait()

	var stats map[string]uint64
	if err := json.Unmarshal(do(t, h, "GET", "/stats", "").Body.Bytes(), &stats); err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{
		"gets": goroutines * rounds * 3 / 4, "hits": goroutines * rounds * 3 / 4, "misses": 0,
		"puts": goroutines * rounds / 4, "rejected": 0, "requests": goroutines*rounds + 1,
	}
	if !maps.Equal(stats, want) {
		t.Errorf("stats %v, want %v", stats, want)
	}
}

// do serves one request through h.
func do(t testing.TB, h http.Handler, method, target, body string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, strings.NewReader(body)))
	return rec
}

// check fails unless rec matches st.
func check(t *testing.T, rec *httptest.ResponseRecorder, st step) {
	t.Helper()
	what := st.method + " " + st.target
	if len(what) > 60 {
		what = what[:60] + "…"
	}
	if rec.Code != st.wantCode {
		t.Errorf("%s: status %d, want %d (body %q)", what, rec.Code, st.wantCode, rec.Body.String())
	}
	for k, v := range st.wantHdr {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s: header %s %q, want %q", what, k, got, v)
		}
	}
	switch {
	case st.wantText != "":
		if got := rec.Body.String(); got != st.wantText {
			t.Errorf("%s: body %q, want %q", what, got, st.wantText)
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("%s: Content-Type %q, want text/plain", what, ct)
		}
	case st.wantJSON == nil:
		if rec.Body.Len() != 0 {
			t.Errorf("%s: body %q, want none", what, rec.Body.String())
		}
	default:
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q, want application/json", what, ct)
		}
		var got map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("%s: body %q is not JSON: %v", what, rec.Body.String(), err)
		}
		if !maps.EqualFunc(got, st.wantJSON, func(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
			t.Errorf("%s: body %v, want %v", what, got, st.wantJSON)
		}
	}
}

// utf8Valid returns s with each invalid byte replaced by U+FFFD, as
// encoding/json does.
func utf8Valid(s string) string {
	var b strings.Builder
	for _, r := range s { // each invalid byte comes as a utf8.RuneError of its own
		b.WriteRune(r)
	}
	return b.String()
}
