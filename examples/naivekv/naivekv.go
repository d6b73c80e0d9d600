// Package naivekv is an example key/value service written the way a first
// draft often is: one store-wide sync.Mutex taken for reads as well as writes
// and held while the response is encoded, a second mutex around the request
// counters, and a fresh map and json.Encoder for every response. It is
// correct, and under concurrent reads it spends its time waiting on locks and
// allocating: the contention and garbage heapscope must name. See package
// tunedkv for the tuned twin.
package naivekv

import (
	"fmt"
	"sync"

	"github.com/heapscope/heapscope/examples/internal/kv"
)

// The limits are package kv's, shared with package tunedkv so that the twins
// answer alike.
const (
	// DefaultPreload is the number of keys a service starts with by default.
	DefaultPreload = kv.DefaultPreload
	// MaxPreload is the largest preload accepted.
	MaxPreload = kv.MaxPreload
	// MaxKeyLen is the longest key, in bytes, the handler accepts.
	MaxKeyLen = kv.MaxKeyLen
	// MaxValueLen is the largest value, in bytes, a PUT may store.
	MaxValueLen = kv.MaxValueLen
)

// Store is a map of keys to values guarded by a single mutex. It is safe for
// concurrent use.
type Store struct {
	mu   sync.Mutex
	data map[string]string
}

// NewStore returns a store holding the keys key-0 … key-(preload-1), each
// with a value of about 100 bytes (see PreloadValue).
func NewStore(preload int) (*Store, error) {
	if err := kv.CheckPreload(preload); err != nil {
		return nil, fmt.Errorf("new store: %w", err)
	}
	s := &Store{data: make(map[string]string, preload)}
	for i := range preload {
		s.data[kv.Key(i)] = kv.PreloadValue(i)
	}
	return s, nil
}

// PreloadValue returns the value preloaded under key-i: 100 bytes that
// start with "value-i-", the same as tunedkv.PreloadValue.
func PreloadValue(i int) string {
	return kv.PreloadValue(i)
}

// Get returns the value of key.
func (s *Store) Get(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.data[key]
	return v, ok
}

// Put sets the value of key.
func (s *Store) Put(key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[key] = value
}

// Len returns the number of keys.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.data)
}
