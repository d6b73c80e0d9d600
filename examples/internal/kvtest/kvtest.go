// Package kvtest is the conformance suite of the key/value example services,
// naivekv and tunedkv: the twins must answer every request alike, so each
// runs these tests and benchmarks with its own constructors. The suite
// covers:
//
//   - TestHandler: the routes, request by request, from fresh handlers;
//     JSON escaping of keys and values; concurrent puts and gets.
//   - TestStore: preloading, its limits, and concurrent use.
//   - BenchmarkGet and BenchmarkGetParallel: GETs of preloaded keys.
//
// It is imported by test files only.
package kvtest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/heapscope/heapscope/examples/internal/kv"
	"github.com/heapscope/heapscope/examples/internal/servetest"
)

// Store is what the suite needs of a service's store.
type Store interface {
	// Get returns the value of key.
	Get(key string) (string, bool)
	// Put sets the value of key.
	Put(key, value string)
	// Len returns the number of keys.
	Len() int
}

// NewHandler returns newHandler over a store made by newStore with preload
// keys, failing tb when the store cannot be made.
func NewHandler[S any](tb testing.TB, preload int, newStore func(preload int) (S, error), newHandler func(S) http.Handler) http.Handler {
	tb.Helper()
	s, err := newStore(preload)
	if err != nil {
		tb.Fatal(err)
	}
	return newHandler(s)
}

// BenchmarkGet serves GET /kv/key-N for keys drawn from the DefaultPreload
// preloaded ones, through a handler made by newStore and newHandler, into a
// ResponseWriter that discards.
func BenchmarkGet[S any](b *testing.B, newStore func(preload int) (S, error), newHandler func(S) http.Handler) {
	h := NewHandler(b, kv.DefaultPreload, newStore, newHandler)
	servetest.Loop(b, h, getRequests())
}

// BenchmarkGetParallel is BenchmarkGet from GOMAXPROCS goroutines, where
// the locks show.
func BenchmarkGetParallel[S any](b *testing.B, newStore func(preload int) (S, error), newHandler func(S) http.Handler) {
	h := NewHandler(b, kv.DefaultPreload, newStore, newHandler)
	servetest.LoopParallel(b, h, getRequests)
}

// getRequests returns a GET for each preloaded key, in a shuffled but fixed
// order.
func getRequests() []*http.Request {
	reqs := make([]*http.Request, kv.DefaultPreload)
	for i := range reqs {
		reqs[i] = httptest.NewRequest(http.MethodGet, "/kv/"+kv.Key((i*7919)%kv.DefaultPreload), nil)
	}
	return reqs
}
