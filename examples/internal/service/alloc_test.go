//go:build !race

// The race detector makes sync.Pool drop objects at random, so allocation
// counts are only meaningful without it.

package service

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestNewMux_ServiceRequestsDoNotAllocate(t *testing.T) {
	h := NewMux("svc", teapotService())
	r := httptest.NewRequest(http.MethodGet, "/plain", nil)
	w := &discardWriter{header: make(http.Header)}
	h.ServeHTTP(w, r) // creates the metric series
	if n := testing.AllocsPerRun(1000, func() { h.ServeHTTP(w, r) }); n != 0 {
		t.Errorf("a request to a service route allocates %v times in NewMux's layers, want 0", n)
	}
}
