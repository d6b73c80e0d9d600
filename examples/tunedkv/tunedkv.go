// Package tunedkv is the tuned twin of package naivekv: the same routes and
// responses, byte for byte, from a store split into shards each guarded by a
// sync.RWMutex (readers do not wait for each other, and never while a
// response is written), atomic request counters, and responses appended into
// pooled buffers by a JSON string encoder of its own instead of a map and a
// json.Encoder, so a GET does not allocate in this package.
package tunedkv

import (
	"fmt"
	"hash/maphash"
	"strings"
	"sync"

	"github.com/heapscope/heapscope/examples/internal/kv"
)

// The limits are package kv's, shared with package naivekv so that the twins
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

const shardCount = 64 // a power of two

// Store is a map of keys to values split into shards, each guarded by its
// own sync.RWMutex. It is safe for concurrent use.
type Store struct {
	seed   maphash.Seed
	shards [shardCount]shard
}

type shard struct {
	mu   sync.RWMutex
	data map[string]string
	_    [64]byte // keeps neighbouring shards' locks off one cache line
}

// NewStore returns a store holding the keys key-0 … key-(preload-1), each
// with a value of about 100 bytes (see PreloadValue).
func NewStore(preload int) (*Store, error) {
	if err := kv.CheckPreload(preload); err != nil {
		return nil, fmt.Errorf("new store: %w", err)
	}
	s := &Store{seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].data = make(map[string]string, preload/shardCount+1)
	}
	for i := range preload {
		key := kv.Key(i)
		s.shardOf(key).data[key] = kv.PreloadValue(i)
	}
	return s, nil
}

// PreloadValue returns the value preloaded under key-i: 100 bytes that
// start with "value-i-", the same as naivekv.PreloadValue.
func PreloadValue(i int) string {
	return kv.PreloadValue(i)
}

func (s *Store) shardOf(key string) *shard {
	return &s.shards[maphash.String(s.seed, key)&(shardCount-1)]
}

// Get returns the value of key.
func (s *Store) Get(key string) (string, bool) {
	sh := s.shardOf(key)
	sh.mu.RLock()
	v, ok := sh.data[key]
	sh.mu.RUnlock()
	return v, ok
}

// Put sets the value of key.
func (s *Store) Put(key, value string) {
	sh := s.shardOf(key)
	sh.mu.Lock()
	if _, ok := sh.data[key]; !ok {
		key = strings.Clone(key) // do not keep the request's URL alive through a substring
	}
	sh.data[key] = value
	sh.mu.Unlock()
}

// Len returns the number of keys.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		n += len(sh.data)
		sh.mu.RUnlock()
	}
	return n
}
