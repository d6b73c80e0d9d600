package tunedkv

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/heapscope/heapscope/examples/internal/kv"
)

// jsonContentType is shared by every response; net/http does not modify
// header values in place.
var jsonContentType = []string{"application/json"}

// maxPooledBuffer is the largest buffer put back in the pool: a value of
// MaxValueLen bytes fits, an exceptional escaped one is left to the GC.
const maxPooledBuffer = 2 * MaxValueLen

// NewHandler returns the service's routes, the same as naivekv's:
//
//	GET /kv/{key}  200 {"key":…,"value":…}, or 404 {"error":"key not found","key":…}
//	PUT /kv/{key}  the body (at most MaxValueLen bytes, else 413) becomes the value; 204
//	GET /stats     200 with the request counters: {"gets":…,"hits":…,"misses":…,"puts":…,"rejected":…,"requests":…}
//
// Keys longer than MaxKeyLen get 400, other methods 405; every error body is
// JSON {"error":…}. Counters: requests counts every request to these routes,
// gets and puts the well-formed GETs and PUTs of /kv/, hits and misses the
// GETs answered 200 and 404, rejected the requests answered 400, 405 or 413.
func NewHandler(s *Store) http.Handler {
	h := &handler{store: s}
	h.buffers.New = func() any { b := make([]byte, 0, 1024); return &b }
	return kv.Routes(h.kv, h.statsRoute)
}

type handler struct {
	store   *Store
	buffers sync.Pool // of *[]byte

	// Each request adds to one counter; the others are sums.
	hits, misses, puts, rejected, statsReads counter
}

// counter is an atomic counter alone on its cache line.
type counter struct {
	atomic.Uint64
	_ [56]byte
}

func (h *handler) kv(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if r.Method != http.MethodGet && r.Method != http.MethodPut {
		h.rejected.Add(1)
		w.Header().Set("Allow", "GET, PUT")
		h.writeError(w, http.StatusMethodNotAllowed, "method not allowed: use GET or PUT", "", false)
		return
	}
	if len(key) > MaxKeyLen {
		h.rejected.Add(1)
		h.writeError(w, http.StatusBadRequest, "key longer than "+strconv.Itoa(MaxKeyLen)+" bytes", "", false)
		return
	}
	if r.Method == http.MethodPut {
		h.put(w, r, key)
		return
	}

	value, ok := h.store.Get(key)
	if !ok {
		h.misses.Add(1)
		h.writeError(w, http.StatusNotFound, "key not found", key, true)
		return
	}
	h.hits.Add(1)
	bp := h.buffers.Get().(*[]byte)
	b := append((*bp)[:0], `{"key":`...)
	b = appendJSONString(b, key)
	b = append(b, `,"value":`...)
	b = appendJSONString(b, value)
	b = append(b, "}\n"...)
	h.write(w, http.StatusOK, bp, b)
}

func (h *handler) put(w http.ResponseWriter, r *http.Request, key string) {
	bp := h.buffers.Get().(*[]byte)
	b, err := readAll((*bp)[:0], http.MaxBytesReader(w, r.Body, MaxValueLen))
	if err != nil {
		h.recycle(bp, b)
		h.rejected.Add(1)
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.writeError(w, http.StatusRequestEntityTooLarge, "value longer than "+strconv.Itoa(MaxValueLen)+" bytes", "", false)
			return
		}
		h.writeError(w, http.StatusBadRequest, "read body: "+err.Error(), "", false)
		return
	}
	h.puts.Add(1)
	h.store.Put(key, string(b))
	h.recycle(bp, b)
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) statsRoute(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		h.rejected.Add(1)
		w.Header().Set("Allow", http.MethodGet)
		h.writeError(w, http.StatusMethodNotAllowed, "method not allowed: use GET", "", false)
		return
	}
	h.statsReads.Add(1)
	hits, misses := h.hits.Load(), h.misses.Load()
	puts, rejected, reads := h.puts.Load(), h.rejected.Load(), h.statsReads.Load()
	gets := hits + misses

	bp := h.buffers.Get().(*[]byte)
	b := append((*bp)[:0], `{"gets":`...)
	b = strconv.AppendUint(b, gets, 10)
	b = append(b, `,"hits":`...)
	b = strconv.AppendUint(b, hits, 10)
	b = append(b, `,"misses":`...)
	b = strconv.AppendUint(b, misses, 10)
	b = append(b, `,"puts":`...)
	b = strconv.AppendUint(b, puts, 10)
	b = append(b, `,"rejected":`...)
	b = strconv.AppendUint(b, rejected, 10)
	b = append(b, `,"requests":`...)
	b = strconv.AppendUint(b, gets+puts+rejected+reads, 10)
	b = append(b, "}\n"...)
	h.write(w, http.StatusOK, bp, b)
}

// writeError writes {"error":msg} or, with withKey, {"error":msg,"key":key}.
func (h *handler) writeError(w http.ResponseWriter, code int, msg, key string, withKey bool) {
	bp := h.buffers.Get().(*[]byte)
	b := append((*bp)[:0], `{"error":`...)
	b = appendJSONString(b, msg)
	if withKey {
		b = append(b, `,"key":`...)
		b = appendJSONString(b, key)
	}
	b = append(b, "}\n"...)
	h.write(w, code, bp, b)
}

// write sends b, built in the pooled buffer bp, as a JSON response and
// returns the buffer to the pool.
func (h *handler) write(w http.ResponseWriter, code int, bp *[]byte, b []byte) {
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(code)
	_, _ = w.Write(b)
	h.recycle(bp, b)
}

// recycle returns a buffer to the pool, unless it grew too large to keep.
func (h *handler) recycle(bp *[]byte, b []byte) {
	if cap(b) > maxPooledBuffer {
		return
	}
	*bp = b[:0]
	h.buffers.Put(bp)
}

// readAll appends everything r yields to b, as io.ReadAll does without
// allocating when b is large enough.
func readAll(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
