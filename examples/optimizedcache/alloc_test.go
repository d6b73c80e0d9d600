//go:build !race

// The race detector makes sync.Pool drop objects at random, so allocation
// counts are only meaningful without it.

package optimizedcache

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/heapscope/heapscope/examples/internal/servetest"
)

func TestNewHandler_CachedRequestDoesNotAllocate(t *testing.T) {
	h := NewHandler(newWorker(t, 10))
	r := httptest.NewRequest(http.MethodGet, "/process?id=user-42", nil)
	w := servetest.NewDiscardWriter()
	h.ServeHTTP(w, r) // caches the id
	if n := testing.AllocsPerRun(1000, func() { h.ServeHTTP(w, r) }); n != 0 {
		t.Errorf("GET /process for a cached id allocates %v times, want 0", n)
	}
}
