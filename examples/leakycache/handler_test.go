package leakycache

import (
	"net/http"
	"net/http/httptest"
	"strings"
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
		{name: "first call", method: http.MethodGet, target: "/process?id=alice", wantCode: 200, wantType: "application/octet-stream", wantBody: "alice"},
		{name: "escaped id", method: http.MethodGet, target: "/process?id=a%20b%26c", wantCode: 200, wantType: "application/octet-stream", wantBody: "a b&c"},
		{name: "first of repeated parameters", method: http.MethodGet, target: "/process?id=x1&id=x2", wantCode: 200, wantType: "application/octet-stream", wantBody: "x1"},
		{name: "longest id", method: http.MethodGet, target: "/process?id=" + strings.Repeat("k", MaxIDLen), wantCode: 200, wantType: "application/octet-stream", wantBody: strings.Repeat("k", MaxIDLen)},
		{name: "missing id", method: http.MethodGet, target: "/process", wantCode: 400, wantType: "text/plain", wantBody: "missing id query parameter\n"},
		{name: "empty id", method: http.MethodGet, target: "/process?id=", wantCode: 400, wantType: "text/plain", wantBody: "missing id query parameter\n"},
		{name: "bad escape", method: http.MethodGet, target: "/process?id=%zz", wantCode: 400, wantType: "text/plain", wantBody: "missing id query parameter\n"},
		{name: "id too long", method: http.MethodGet, target: "/process?id=" + strings.Repeat("k", MaxIDLen+1), wantCode: 400, wantType: "text/plain", wantBody: "id longer than 256 bytes\n"},
		{name: "wrong method", method: http.MethodPost, target: "/process?id=alice", wantCode: 405, wantType: "text/plain", wantBody: "method not allowed: use GET\n"},
		{name: "unknown path", method: http.MethodGet, target: "/other", wantCode: 404, wantType: "text/plain", wantBody: "404 page not found\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHandler(NewWorker())
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
			if tt.wantCode == http.StatusMethodNotAllowed && rec.Header().Get("Allow") != http.MethodGet {
				t.Errorf("Allow %q, want GET", rec.Header().Get("Allow"))
			}
		})
	}
}

func TestNewHandler_RepeatedIDGrows(t *testing.T) {
	w := NewWorker()
	h := NewHandler(w)
	for n := 1; n <= 3; n++ {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/process?id=bob", nil))
		if want := strings.Repeat("bob", n); rec.Body.String() != want {
			t.Errorf("request %d: body %q, want %q", n, rec.Body.String(), want)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/process?id=carol", nil))
	if w.Len() != 2 {
		t.Errorf("Len() = %d after ids bob and carol, want 2", w.Len())
	}
}

// BenchmarkHandler_Process serves GET /process for ids drawn from a fixed
// set, through the handler, with a ResponseWriter that discards; the same
// benchmark runs in package optimizedcache.
func BenchmarkHandler_Process(b *testing.B) {
	ids := benchIDs()
	h := NewHandler(NewWorker())
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
