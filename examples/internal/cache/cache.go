// Package cache holds what the cache example services, leakycache and
// optimizedcache, share so that they answer alike: the longest id, and the
// refusal of a /process request they do not serve.
package cache

import "net/http"

// MaxIDLen is the longest id, in bytes, a handler accepts.
const MaxIDLen = 256

// Reject answers a /process request that asks for id and that the services
// refuse: 405 for a method other than GET, 400 for an id that is empty or
// longer than MaxIDLen. It reports whether it answered; otherwise the
// caller serves the id. It allocates only when it answers.
func Reject(w http.ResponseWriter, r *http.Request, id string) bool {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed: use GET", http.StatusMethodNotAllowed)
		return true
	}
	switch {
	case id == "":
		http.Error(w, "missing id query parameter", http.StatusBadRequest)
		return true
	case len(id) > MaxIDLen:
		http.Error(w, "id longer than 256 bytes", http.StatusBadRequest)
		return true
	}
	return false
}
