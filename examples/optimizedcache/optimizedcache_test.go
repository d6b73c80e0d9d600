package optimizedcache

import (
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/heapscope/heapscope/examples/internal/cachetest"
)

func newWorker(t testing.TB, capacity int) *Worker {
	t.Helper()
	w, err := NewWorker(capacity)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestNewWorker_Capacity(t *testing.T) {
	tests := []struct {
		name     string
		capacity int
		wantErr  bool
	}{
		{name: "one", capacity: 1},
		{name: "default", capacity: DefaultCapacity},
		{name: "zero", capacity: 0, wantErr: true},
		{name: "negative", capacity: -5, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewWorker(tt.capacity)
			if (err != nil) != tt.wantErr {
				t.Errorf("NewWorker(%d) error %v, want error %v", tt.capacity, err, tt.wantErr)
			}
		})
	}
}

func TestWorker_ProcessLRU(t *testing.T) {
	tests := []struct {
		name     string
		capacity int
		calls    []string
		wantIDs  []string // most recently used first
	}{
		{name: "under capacity", capacity: 3, calls: []string{"a", "b"}, wantIDs: []string{"b", "a"}},
		{name: "evicts least recently used", capacity: 3, calls: []string{"a", "b", "c", "d"}, wantIDs: []string{"d", "c", "b"}},
		{name: "hit refreshes", capacity: 3, calls: []string{"a", "b", "c", "a", "d"}, wantIDs: []string{"d", "a", "c"}},
		{name: "repeated id at capacity evicts nothing", capacity: 2, calls: []string{"a", "b", "b", "b"}, wantIDs: []string{"b", "a"}},
		{name: "present id at capacity is not evicted", capacity: 2, calls: []string{"a", "b", "a", "c"}, wantIDs: []string{"c", "a"}},
		{name: "capacity one", capacity: 1, calls: []string{"a", "b", "c"}, wantIDs: []string{"c"}},
		{name: "evicted id comes back", capacity: 2, calls: []string{"a", "b", "c", "a"}, wantIDs: []string{"a", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorker(t, tt.capacity)
			for _, id := range tt.calls {
				if got := w.Process(id); string(got) != id {
					t.Fatalf("Process(%q) = %q, want %q", id, got, id)
				}
			}
			if got := w.IDs(); !slices.Equal(got, tt.wantIDs) {
				t.Errorf("IDs() = %q, want %q", got, tt.wantIDs)
			}
			if got := w.Len(); got != len(tt.wantIDs) {
				t.Errorf("Len() = %d, want %d", got, len(tt.wantIDs))
			}
		})
	}
}

func TestWorker_ProcessBounded(t *testing.T) {
	const capacity = 100
	w := newWorker(t, capacity)
	for i := range 10 * capacity {
		id := "user-" + strconv.Itoa(i%(3*capacity))
		if got := w.Process(id); string(got) != id {
			t.Fatalf("Process(%q) = %q: the value must not grow", id, got)
		}
	}
	if got := w.Len(); got != capacity {
		t.Errorf("Len() = %d, want the capacity %d", got, capacity)
	}
}

// TestWorker_ProcessReturnsCopy runs the suite of package cachetest; here an
// id's second call returns the same answer.
func TestWorker_ProcessReturnsCopy(t *testing.T) {
	cachetest.TestWorkerReturnsCopy(t, newWorker(t, 10), cachetest.Same)
}

func TestWorker_ProcessSubstringID(t *testing.T) {
	w := newWorker(t, 10)
	buf := []byte("alpha-beta")
	s := string(buf)
	w.Process(s[:5])
	if got := w.IDs(); !slices.Equal(got, []string{"alpha"}) {
		t.Errorf("IDs() = %q, want [alpha]", got)
	}
}

func TestWorker_AppendProcess(t *testing.T) {
	w := newWorker(t, 10)
	dst := []byte("prefix:")
	if got := w.AppendProcess(dst, "id"); string(got) != "prefix:id" {
		t.Errorf("AppendProcess = %q, want %q", got, "prefix:id")
	}
}

func TestWorker_ProcessConcurrent(t *testing.T) {
	const capacity, goroutines, calls, ids = 16, 8, 500, 40
	w := newWorker(t, capacity)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				id := "id-" + strconv.Itoa((g*31+i)%ids)
				if got := w.Process(id); string(got) != id {
					t.Errorf("Process(%q) = %q", id, got)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := w.Len(); got != capacity {
		t.Errorf("Len() = %d, want %d", got, capacity)
	}
	seen := make(map[string]bool)
	for _, id := range w.IDs() {
		if seen[id] {
			t.Errorf("id %q listed twice", id)
		}
		seen[id] = true
	}
}

// BenchmarkWorker_Process processes the ids of cachetest.IDs; the same
// benchmark runs in package leakycache.
func BenchmarkWorker_Process(b *testing.B) {
	cachetest.BenchmarkProcess(b, newWorker(b, DefaultCapacity))
}

// BenchmarkWorker_ProcessParallel is BenchmarkWorker_Process from
// GOMAXPROCS goroutines.
func BenchmarkWorker_ProcessParallel(b *testing.B) {
	cachetest.BenchmarkProcessParallel(b, newWorker(b, DefaultCapacity))
}

// BenchmarkWorker_ProcessEvicting processes the ids of cachetest.IDs with a
// cache a tenth their number, so most calls evict.
func BenchmarkWorker_ProcessEvicting(b *testing.B) {
	cachetest.BenchmarkProcess(b, newWorker(b, len(cachetest.IDs())/10))
}
