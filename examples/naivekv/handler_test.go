package naivekv

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
)

type step struct {
	method   string
	target   string
	body     string
	wantCode int
	wantJSON map[string]any // decoded body; nil for none
	wantHdr  map[string]string
}

func newHandler(t testing.TB, preload int) http.Handler {
	t.Helper()
	s, err := NewStore(preload)
	if err != nil {
		t.Fatal(err)
	}
	return NewHandler(s)
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
	if st.wantJSON == nil {
		if rec.Body.Len() != 0 {
			t.Errorf("%s: body %q, want none", what, rec.Body.String())
		}
		return
	}
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

func TestNewHandler(t *testing.T) {
	big := strings.Repeat("v", MaxValueLen)
	longKey := strings.Repeat("k", MaxKeyLen)
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "get preloaded", steps: []step{
			{method: "GET", target: "/kv/key-2", wantCode: 200, wantJSON: map[string]any{"key": "key-2", "value": PreloadValue(2)}},
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
			{method: "GET", target: "/kv/key-1", wantCode: 200, wantJSON: map[string]any{"key": "key-1", "value": PreloadValue(1)}},
			{method: "GET", target: "/kv/nope", wantCode: 404, wantJSON: map[string]any{"error": "key not found", "key": "nope"}},
			{method: "PUT", target: "/kv/n", body: "1", wantCode: 204},
			{method: "POST", target: "/kv/n", wantCode: 405, wantJSON: map[string]any{"error": "method not allowed: use GET or PUT"}},
			{method: "GET", target: "/stats", wantCode: 200, wantJSON: map[string]any{
				"gets": 2, "hits": 1, "misses": 1, "puts": 1, "rejected": 1, "requests": 5}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHandler(t, 3)
			for _, st := range tt.steps {
				check(t, do(t, h, st.method, st.target, st.body), st)
			}
		})
	}
}

func TestNewHandler_UnknownPaths(t *testing.T) {
	h := newHandler(t, 3)
	for _, target := range []string{"/kv/", "/kv/a/b", "/other"} {
		if rec := do(t, h, "GET", target, ""); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", target, rec.Code)
		}
	}
}

// jsonCases are strings that exercise every branch of JSON string escaping.
var jsonCases = []struct{ name, s string }{
	{"quotes", `say "hi"`},
	{"backslashes", `C:\dir\file \\ \"`},
	{"control characters", "nul\x00 bell\x07 bs\b ff\f nl\n cr\r tab\t esc\x1b unit\x1f del\x7f"},
	{"html", "<script>a && b</script>"},
	{"non-ascii", "héllo wörld — 日本語 🎉"},
	{"line separators", "a\u2028b\u2029c"},
	{"invalid utf-8", "bad \xff\xfe byte, cut \xe2\x82 rune"},
	{"empty", ""},
}

func TestNewHandler_JSONEscaping(t *testing.T) {
	h := newHandler(t, 0)
	for _, tc := range jsonCases {
		for _, part := range []string{"key", "value"} {
			t.Run(tc.name+"/"+part, func(t *testing.T) {
				key, value := "k-"+part+"-"+tc.name, tc.s
				if part == "key" {
					key, value = "k"+tc.s, "v"
				}
				if rec := do(t, h, "PUT", "/kv/"+url.PathEscape(key), value); rec.Code != http.StatusNoContent {
					t.Fatalf("PUT: status %d, want 204: %s", rec.Code, rec.Body.String())
				}
				rec := do(t, h, "GET", "/kv/"+url.PathEscape(key), "")
				if rec.Code != http.StatusOK {
					t.Fatalf("GET: status %d, want 200: %s", rec.Code, rec.Body.String())
				}
				var got struct{ Key, Value string }
				if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
					t.Fatalf("body %q is not JSON: %v", rec.Body.String(), err)
				}
				if got.Key != utf8Valid(key) || got.Value != utf8Valid(value) {
					t.Errorf("decoded key, value = %q, %q; want %q, %q", got.Key, got.Value, utf8Valid(key), utf8Valid(value))
				}
			})
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

func TestNewHandler_ConcurrentPutGet(t *testing.T) {
	h := newHandler(t, 100)
	const goroutines, rounds = 8, 100
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range rounds {
				key := "key-" + strconv.Itoa((g*13+i)%100)
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

// BenchmarkHandler_Get serves GET /kv/key-N for keys drawn from the 1000
// preloaded ones, through the handler, with a ResponseWriter that discards;
// the same benchmark runs in package tunedkv.
func BenchmarkHandler_Get(b *testing.B) {
	h := newHandler(b, DefaultPreload)
	reqs := benchRequests()
	w := newDiscardWriter()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.ServeHTTP(w, reqs[i%len(reqs)])
		i++
	}
}

// BenchmarkHandler_GetParallel is BenchmarkHandler_Get from GOMAXPROCS
// goroutines, where the locks show.
func BenchmarkHandler_GetParallel(b *testing.B) {
	h := newHandler(b, DefaultPreload)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		reqs := benchRequests() // a request is modified by routing: one set per goroutine
		w := newDiscardWriter()
		i := 0
		for pb.Next() {
			h.ServeHTTP(w, reqs[i%len(reqs)])
			i++
		}
	})
}

func benchRequests() []*http.Request {
	reqs := make([]*http.Request, DefaultPreload)
	for i := range reqs {
		reqs[i] = httptest.NewRequest(http.MethodGet, "/kv/key-"+strconv.Itoa((i*7919)%DefaultPreload), nil)
	}
	return reqs
}

// discardWriter is a ResponseWriter that drops what it is given, so that
// benchmarks measure the handler rather than a recorder.
type discardWriter struct{ header http.Header }

func newDiscardWriter() *discardWriter { return &discardWriter{header: make(http.Header)} }

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}
