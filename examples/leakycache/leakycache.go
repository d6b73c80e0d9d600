// Package leakycache is an example service that leaks memory on purpose: its
// Worker keeps every result it ever computed in a map that never evicts, and
// the entry of an id grows each time the id comes back. It is otherwise
// correct (safe for concurrent use), so under load its inuse_space grows
// without bound while nothing crashes: the kind of leak heapscope must name.
// See package optimizedcache for the fixed twin, which answers every request
// alike (the twins' handlers refuse bad requests through package cache).
package leakycache

import (
	"net/http"
	"sync"

	"github.com/heapscope/heapscope/examples/internal/cache"
)

// Worker processes ids and caches the results forever. It is safe for
// concurrent use.
type Worker struct {
	mu    sync.Mutex
	cache map[string][]byte
}

// NewWorker returns a Worker with an empty cache.
func NewWorker() *Worker {
	return &Worker{cache: make(map[string][]byte)}
}

// Process appends id to its cache entry and returns a fresh copy of the
// entry: the n-th call with an id returns the id repeated n times. The cache
// never evicts, so every new id grows the map and every repeated id grows its
// entry.
func (w *Worker) Process(id string) []byte {
	b := []byte(id) // a new buffer on every call; returned below, so it escapes to the heap

	w.mu.Lock()
	defer w.mu.Unlock()
	w.cache[id] = append(w.cache[id], b...) // the leak: nothing ever leaves the map
	b = append(b[:0], w.cache[id]...)       // the copy grows with the entry
	return b
}

// Len returns the number of ids in the cache.
func (w *Worker) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.cache)
}

// Bytes returns the total length of the cache's entries.
func (w *Worker) Bytes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, v := range w.cache {
		n += len(v)
	}
	return n
}

// MaxIDLen is the longest id, in bytes, the handler accepts: package
// cache's, shared with package optimizedcache.
const MaxIDLen = cache.MaxIDLen

// NewHandler returns the service's routes:
//
//	GET /process?id=ID  200 with Process(ID) as application/octet-stream;
//	                    400 when id is missing, empty or longer than MaxIDLen;
//	                    405 for another method.
func NewHandler(w *Worker) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/process", func(rw http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		if cache.Reject(rw, r, id) {
			return
		}
		body := w.Process(id)
		rw.Header().Set("Content-Type", "application/octet-stream")
		_, _ = rw.Write(body)
	})
	return mux
}
