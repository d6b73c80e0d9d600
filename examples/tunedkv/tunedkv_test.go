package tunedkv

import (
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestNewStore(t *testing.T) {
	tests := []struct {
		name    string
		preload int
		wantErr bool
	}{
		{name: "empty", preload: 0},
		{name: "default", preload: DefaultPreload},
		{name: "negative", preload: -1, wantErr: true},
		{name: "too many", preload: MaxPreload + 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewStore(tt.preload)
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
			if v, ok := s.Get("key-" + strconv.Itoa(last)); !ok || v != PreloadValue(last) {
				t.Errorf("Get(key-%d) = %q, %v; want %q, true", last, v, ok, PreloadValue(last))
			}
		})
	}
}

func TestPreloadValue(t *testing.T) {
	for _, i := range []int{0, 7, 999, 123456} {
		v := PreloadValue(i)
		if len(v) != 100 || !strings.HasPrefix(v, "value-"+strconv.Itoa(i)+"-") {
			t.Errorf("PreloadValue(%d) = %q (%d bytes), want 100 bytes starting value-%d-", i, v, len(v), i)
		}
	}
}

func TestStore_Concurrent(t *testing.T) {
	s, err := NewStore(0)
	if err != nil {
		t.Fatal(err)
	}
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
