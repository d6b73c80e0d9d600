//go:build !race

// The race detector makes sync.Pool drop objects at random, so allocation
// counts are only meaningful without it.

package tunedkv

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/heapscope/heapscope/examples/internal/kvtest"
	"github.com/heapscope/heapscope/examples/internal/servetest"
)

func TestNewHandler_GetAllocations(t *testing.T) {
	h := kvtest.NewHandler(t, 10, NewStore, NewHandler)
	w := servetest.NewDiscardWriter()
	tests := []struct {
		name   string
		target string
		max    float64
	}{
		// net/http's ServeMux allocates the wildcard match of /kv/{key};
		// the handler itself allocates nothing.
		{name: "hit", target: "/kv/key-3", max: 1},
		{name: "miss", target: "/kv/nope", max: 1},
		{name: "stats", target: "/stats", max: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, tt.target, nil)
			if n := testing.AllocsPerRun(1000, func() { h.ServeHTTP(w, r) }); n > tt.max {
				t.Errorf("GET %s allocates %v times, want at most %v", tt.target, n, tt.max)
			}
		})
	}
}
