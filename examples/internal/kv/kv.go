// Package kv holds what the key/value example services, naivekv and tunedkv,
// share so that they answer alike: their limits, their routes, the check of
// a preload count, and the keys and values they preload.
package kv

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

const (
	// DefaultPreload is the number of keys a service starts with by default.
	DefaultPreload = 1000
	// MaxPreload is the largest preload accepted.
	MaxPreload = 10_000_000
	// MaxKeyLen is the longest key, in bytes, a handler accepts.
	MaxKeyLen = 256
	// MaxValueLen is the largest value, in bytes, a PUT may store.
	MaxValueLen = 64 << 10
)

// preloadValueLen is the length of every preloaded value.
const preloadValueLen = 100

// Routes returns the services' routes: /kv/{key} served by key, /stats by
// stats.
func Routes(key, stats http.HandlerFunc) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/kv/{key}", key)
	mux.HandleFunc("/stats", stats)
	return mux
}

// CheckPreload returns an error unless preload is from 0 to MaxPreload.
func CheckPreload(preload int) error {
	if preload < 0 || preload > MaxPreload {
		return fmt.Errorf("preload %d: must be from 0 to %d", preload, MaxPreload)
	}
	return nil
}

// Key returns the i-th preloaded key, key-i.
func Key(i int) string {
	return "key-" + strconv.Itoa(i)
}

// PreloadValue returns the value preloaded under Key(i): 100 bytes that
// start with "value-i-" and go on with filler that depends on i.
func PreloadValue(i int) string {
	const filler = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b strings.Builder
	b.Grow(preloadValueLen)
	b.WriteString("value-")
	b.WriteString(strconv.Itoa(i))
	b.WriteByte('-')
	for j := 0; b.Len() < preloadValueLen; j++ {
		b.WriteByte(filler[(i+j)%len(filler)])
	}
	return b.String()
}
