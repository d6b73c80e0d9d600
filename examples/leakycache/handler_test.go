package leakycache

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/examples/internal/cachetest"
)

// TestNewHandler runs the handler suite of package cachetest, which package
// optimizedcache runs too; here an id's second request returns it twice.
func TestNewHandler(t *testing.T) {
	cachetest.TestHandler(t, func(testing.TB) http.Handler { return NewHandler(NewWorker()) }, cachetest.Doubled)
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

// BenchmarkHandler_Process serves GET /process through the handler (see
// cachetest.BenchmarkHandler); the same benchmark runs in package
// optimizedcache.
func BenchmarkHandler_Process(b *testing.B) {
	cachetest.BenchmarkHandler(b, NewHandler(NewWorker()))
}
