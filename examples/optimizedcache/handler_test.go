package optimizedcache

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

func TestNewHandler(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		target   string
		wantCode int
		wantType string
		wantBody string
	}{
		{name: "ok", method: http.MethodGet, target: "/process?id=alice", wantCode: 200, wantType: "application/octet-stream", wantBody: "alice"},
		{name: "escaped id", method: http.MethodGet, target: "/process?id=a%20b%26c+d", wantCode: 200, wantType: "application/octet-stream", wantBody: "a b&c d"},
		{name: "escaped key", method: http.MethodGet, target: "/process?%69d=k", wantCode: 200, wantType: "application/octet-stream", wantBody: "k"},
		{name: "other parameters first", method: http.MethodGet, target: "/process?x=1&&id=y", wantCode: 200, wantType: "application/octet-stream", wantBody: "y"},
		{name: "first of repeated parameters", method: http.MethodGet, target: "/process?id=x1&id=x2", wantCode: 200, wantType: "application/octet-stream", wantBody: "x1"},
		{name: "bad escape skipped", method: http.MethodGet, target: "/process?id=%zz&id=ok", wantCode: 200, wantType: "application/octet-stream", wantBody: "ok"},
		{name: "longest id", method: http.MethodGet, target: "/process?id=" + strings.Repeat("k", MaxIDLen), wantCode: 200, wantType: "application/octet-stream", wantBody: strings.Repeat("k", MaxIDLen)},
		{name: "missing id", method: http.MethodGet, target: "/process", wantCode: 400, wantType: "text/plain", wantBody: "missing id query parameter\n"},
		{name: "empty id", method: http.MethodGet, target: "/process?id=", wantCode: 400, wantType: "text/plain", wantBody: "missing id query parameter\n"},
		{name: "semicolon", method: http.MethodGet, target: "/process?id=a;b", wantCode: 400, wantType: "text/plain", wantBody: "missing id query parameter\n"},
		{name: "bad escape", method: http.MethodGet, target: "/process?id=%zz", wantCode: 400, wantType: "text/plain", wantBody: "missing id query parameter\n"},
		{name: "id too long", method: http.MethodGet, target: "/process?id=" + strings.Repeat("k", MaxIDLen+1), wantCode: 400, wantType: "text/plain", wantBody: "id longer than 256 bytes\n"},
		{name: "wrong method", method: http.MethodDelete, target: "/process?id=alice", wantCode: 405, wantType: "text/plain", wantBody: "method not allowed: use GET\n"},
		{name: "unknown path", method: http.MethodGet, target: "/other", wantCode: 404, wantType: "text/plain", wantBody: "404 page not found\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHandler(newWorker(t, 10))
			for range 2 { // the second request is served from the cache
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.target, nil))
				if rec.Code != tt.wantCode {
					t.Errorf("status %d, want %d", rec.Code, tt.wantCode)
				}
				if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, tt.wantType) {
					t.Errorf("Content-Type %q, want prefix %q", got, tt.wantType)
				}
				if got := rec.Body.String(); got != tt.wantBody {
					t.Errorf("body %q, want %q", got, tt.wantBody)
				}
			}
		})
	}
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

// BenchmarkHandler_Process serves GET /process for ids drawn from a fixed
// set, through the handler, with a ResponseWriter that discards.
func BenchmarkHandler_Process(b *testing.B) {
	ids := benchIDs()
	h := NewHandler(newWorker(b, DefaultCapacity))
	reqs := make([]*http.Request, len(ids))
	for i, id := range ids {
		reqs[i] = httptest.NewRequest(http.MethodGet, "/process?id="+id, nil)
	}
	w := &discardWriter{header: make(http.Header)}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.ServeHTTP(w, reqs[i%len(reqs)])
		i++
	}
}

// discardWriter is a ResponseWriter that drops what it is given.
type discardWriter struct{ header http.Header }

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}
