package optimizedcache

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/heapscope/heapscope/examples/internal/cachetest"
)

// TestNewHandler runs the handler suite of package cachetest, which package
// leakycache runs too; here an id's second request, served from the cache,
// returns the same answer.
func TestNewHandler(t *testing.T) {
	cachetest.TestHandler(t, func(t testing.TB) http.Handler { return NewHandler(newWorker(t, 10)) }, cachetest.Same)
}

func TestNewHandler_Concurrent(t *testing.T) {
	h := NewHandler(newWorker(t, 8))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				id := "id-" + string(rune('a'+(g+i)%20))
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/process?id="+id, nil))
				if rec.Code != http.StatusOK || rec.Body.String() != id {
					t.Errorf("GET id=%s: %d %q", id, rec.Code, rec.Body.String())
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestQueryValue(t *testing.T) {
	tests := []struct {
		name   string
		query  string
		want   string
		wantOK bool
	}{
		{name: "empty", query: ""},
		{name: "only", query: "id=a", want: "a", wantOK: true},
		{name: "empty value", query: "id=", want: "", wantOK: true},
		{name: "no equals", query: "id", want: "", wantOK: true},
		{name: "plus", query: "id=a+b", want: "a b", wantOK: true},
		{name: "later", query: "a=1&id=2", want: "2", wantOK: true},
		{name: "prefix key", query: "idx=1&id=2", want: "2", wantOK: true},
		{name: "semicolon skipped", query: "id=1;x&id=2", want: "2", wantOK: true},
		{name: "bad key escape", query: "i%d=1", wantOK: false},
		{name: "too many parameters", query: strings.Repeat("a&", maxQueryParams) + "id=1", wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := queryValue(tt.query, "id")
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("queryValue(%q) = %q, %v; want %q, %v", tt.query, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// FuzzQueryValue checks queryValue against url.ParseQuery.
func FuzzQueryValue(f *testing.F) {
	for _, s := range []string{"", "id=a", "id=%zz&id=b", "x=1;id=2&id=3", "%69d=%41+b", "id", "&&id=&", "id=%e2%80%a8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		values, _ := url.ParseQuery(query)
		want, wantOK := "", false
		if vs, ok := values["id"]; ok {
			want, wantOK = vs[0], true
		}
		got, ok := queryValue(query, "id")
		if got != want || ok != wantOK {
			t.Errorf("queryValue(%q) = %q, %v; url.ParseQuery gives %q, %v", query, got, ok, want, wantOK)
		}
	})
}

// BenchmarkHandler_Process serves GET /process through the handler (see
// cachetest.BenchmarkHandler); the same benchmark runs in package
// leakycache.
func BenchmarkHandler_Process(b *testing.B) {
	cachetest.BenchmarkHandler(b, NewHandler(newWorker(b, DefaultCapacity)))
}
