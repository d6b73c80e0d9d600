// Package optimizedcache is the fixed twin of package leakycache: the same
// Worker.Process API and HTTP routes, with a bounded LRU cache (container/list
// and a map, O(1) per call) that stores one bounded value per id, reuses the
// evicted entry's memory for the new one, and serves responses from pooled
// buffers. Under load its inuse_space levels off at the cache's capacity.
package optimizedcache

import (
	"container/list"
	"fmt"
	"strings"
	"sync"

	"github.com/heapscope/heapscope/examples/internal/cache"
)

const (
	// DefaultCapacity is the number of ids a Worker keeps by default:
	// small enough that the demo's load (500 requests/s over 100 000 ids)
	// fills it in two seconds, after which inuse_space stays level.
	DefaultCapacity = 1000
	// MaxIDLen is the longest id, in bytes, the handler accepts: package
	// cache's, shared with package leakycache so that the twins answer
	// alike.
	MaxIDLen = cache.MaxIDLen
)

// Worker processes ids and keeps the results of the most recently used ones.
// It is safe for concurrent use.
type Worker struct {
	mu       sync.Mutex
	capacity int
	items    map[string]*list.Element // of *entry
	order    *list.List               // most recently used first
}

type entry struct {
	id    string
	value []byte
}

// NewWorker returns a Worker that keeps at most capacity ids.
func NewWorker(capacity int) (*Worker, error) {
	if capacity < 1 {
		return nil, fmt.Errorf("new worker: capacity %d: must be at least 1", capacity)
	}
	return &Worker{
		capacity: capacity,
		items:    make(map[string]*list.Element, capacity),
		order:    list.New(),
	}, nil
}

// Process returns the result for id (the id's bytes) in a new slice, from the
// cache when id is there.
func (w *Worker) Process(id string) []byte {
	return w.AppendProcess(nil, id)
}

// AppendProcess appends the result for id to dst and returns the extended
// buffer. With a large enough dst it does not allocate when id is cached.
func (w *Worker) AppendProcess(dst []byte, id string) []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	if el, ok := w.items[id]; ok {
		w.order.MoveToFront(el)
		return append(dst, el.Value.(*entry).value...)
	}

	var el *list.Element
	if w.order.Len() >= w.capacity {
		// Evict the least recently used entry and reuse its element and
		// value buffer for id.
		el = w.order.Back()
		delete(w.items, el.Value.(*entry).id)
		w.order.MoveToFront(el)
	} else {
		el = w.order.PushFront(new(entry))
	}
	e := el.Value.(*entry)
	e.id = strings.Clone(id) // a copy: id may point into a larger string such as a request URL
	e.value = append(e.value[:0], id...)
	w.items[e.id] = el
	return append(dst, e.value...)
}

// Len returns the number of ids in the cache.
func (w *Worker) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.order.Len()
}

// IDs returns the cached ids, most recently used first.
func (w *Worker) IDs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]string, 0, w.order.Len())
	for el := w.order.Front(); el != nil; el = el.Next() {
		ids = append(ids, el.Value.(*entry).id)
	}
	return ids
}
