// Package servetest drives an http.Handler in the example services'
// benchmarks and allocation tests: it serves a fixed set of requests in turn
// into a ResponseWriter that discards, so that the figures are the handler's
// rather than a recorder's. It is imported by test files only.
package servetest

import (
	"net/http"
	"testing"
)

var _ http.ResponseWriter = (*DiscardWriter)(nil)

// DiscardWriter is an http.ResponseWriter that drops what it is given. Its
// header map is kept between responses, as a handler may rely on setting
// it.
type DiscardWriter struct {
	header http.Header
}

// NewDiscardWriter returns a DiscardWriter with an empty header map.
func NewDiscardWriter() *DiscardWriter {
	return &DiscardWriter{header: make(http.Header)}
}

// Header returns the header map.
func (w *DiscardWriter) Header() http.Header { return w.header }

// Write reports b written in full.
func (w *DiscardWriter) Write(b []byte) (int, error) { return len(b), nil }

// WriteHeader does nothing.
func (w *DiscardWriter) WriteHeader(int) {}

// Loop serves reqs through h in turn, one per iteration of b, into a
// DiscardWriter, reporting allocations. A request is modified by routing, so
// reqs must not be served elsewhere at the same time.
func Loop(b *testing.B, h http.Handler, reqs []*http.Request) {
	b.Helper()
	w := NewDiscardWriter()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.ServeHTTP(w, reqs[i%len(reqs)])
		i++
	}
}

// LoopParallel is Loop from GOMAXPROCS goroutines, each serving its own
// requests from newReqs into its own DiscardWriter.
func LoopParallel(b *testing.B, h http.Handler, newReqs func() []*http.Request) {
	b.Helper()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		reqs := newReqs()
		w := NewDiscardWriter()
		i := 0
		for pb.Next() {
			h.ServeHTTP(w, reqs[i%len(reqs)])
			i++
		}
	})
}
