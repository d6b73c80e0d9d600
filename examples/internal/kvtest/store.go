package kvtest

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/heapscope/heapscope/examples/internal/kv"
)

// TestStore checks stores made by newStore: that they hold the preloaded
// keys and values, that a preload out of range is an error, and that Get,
// Put and Len are safe for concurrent use.
func TestStore[S Store](t *testing.T, newStore func(preload int) (S, error)) {
	tests := []struct {
		name    string
		preload int
		wantErr bool
	}{
		{name: "empty", preload: 0},
		{name: "default preloaded", preload: kv.DefaultPreload},
		{name: "negative preload rejected", preload: -1, wantErr: true},
		{name: "too many rejected", preload: kv.MaxPreload + 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := newStore(tt.preload)
			if (err != nil) != tt.wantErr {
				t.Fatalf("NewStore(%d) error %v, want error %v", tt.preload, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if s.Len() != tt.preload {
				t.Errorf("Len() = %d, want %d", s.Len(), tt.preload)
			}
			if tt.preload == 0 {
				return
			}
			last := tt.preload - 1
			if v, ok := s.Get(kv.Key(last)); !ok || v != kv.PreloadValue(last) {
				t.Errorf("Get(key-%d) = %q, %v; want %q, true", last, v, ok, kv.PreloadValue(last))
			}
			if v, ok := s.Get(kv.Key(tt.preload)); ok {
				t.Errorf("Get(key-%d) = %q, true; want no value past the preload", tt.preload, v)
			}
		})
	}
	t.Run("concurrent puts and gets", func(t *testing.T) {
		s, err := newStore(0)
		if err != nil {
			t.Fatal(err)
		}
		testConcurrentStore(t, s)
	})
}

func testConcurrentStore(t *testing.T, s Store) {
	const goroutines, keys = 8, 50
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range keys {
				k := "k" + strconv.Itoa(i)
				s.Put(k, "v"+strconv.Itoa(g))
				if v, ok := s.Get(k); !ok || !strings.HasPrefix(v, "v") {
					t.Errorf("Get(%q) = %q, %v after a Put", k, v, ok)
					return
				}
			}
		})
	}
	wg.Wait()
	if s.Len() != keys {
		t.Errorf("Len() = %d, want %d", s.Len(), keys)
	}
}
