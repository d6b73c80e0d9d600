package naivekv

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/heapscope/heapscope/examples/internal/kv"
)

// NewHandler returns the service's routes:
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
	h := &handler{store: s, stats: make(map[string]uint64)}
	return kv.Routes(h.kv, h.statsRoute)
}

type handler struct {
	store *Store

	statsMu sync.Mutex
	stats   map[string]uint64
}

func (h *handler) count(names ...string) {
	h.statsMu.Lock()
	defer h.statsMu.Unlock()
	for _, n := range names {
		h.stats[n]++
	}
}

func (h *handler) kv(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if r.Method != http.MethodGet && r.Method != http.MethodPut {
		h.count("requests", "rejected")
		w.Header().Set("Allow", "GET, PUT")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": "method not allowed: use GET or PUT"})
		return
	}
	if len(key) > MaxKeyLen {
		h.count("requests", "rejected")
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "key longer than " + strconv.Itoa(MaxKeyLen) + " bytes"})
		return
	}
	if r.Method == http.MethodPut {
		h.put(w, r, key)
		return
	}

	h.count("requests", "gets")
	h.store.mu.Lock()
	defer h.store.mu.Unlock() // held while the response is written
	value, ok := h.store.data[key]
	if !ok {
		h.count("misses")
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "key not found", "key": key})
		return
	}
	h.count("hits")
	writeJSON(w, http.StatusOK, map[string]any{"key": key, "value": value})
}

func (h *handler) put(w http.ResponseWriter, r *http.Request, key string) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxValueLen))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.count("requests", "rejected")
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": "value longer than " + strconv.Itoa(MaxValueLen) + " bytes"})
			return
		}
		h.count("requests", "rejected")
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "read body: " + err.Error()})
		return
	}
	h.count("requests", "puts")
	h.store.Put(key, string(body))
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) statsRoute(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		h.count("requests", "rejected")
		w.Header().Set("Allow", http.MethodGet)
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": "method not allowed: use GET"})
		return
	}
	h.count("requests")
	h.statsMu.Lock()
	resp := map[string]any{}
	for _, n := range []string{"gets", "hits", "misses", "puts", "rejected", "requests"} {
		resp[n] = h.stats[n]
	}
	h.statsMu.Unlock()
	writeJSON(w, http.StatusOK, resp)
}

func writeJSON(w http.ResponseWriter, code int, v map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
