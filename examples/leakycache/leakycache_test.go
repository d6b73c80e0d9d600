package leakycache

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestWorker_ProcessGrowsEntry(t *testing.T) {
	w := NewWorker()
	for n := 1; n <= 5; n++ {
		got := w.Process("ab")
		if want := strings.Repeat("ab", n); string(got) != want {
			t.Fatalf("call %d: Process(\"ab\") = %q, want %q", n, got, want)
		}
	}
	if got := w.Len(); got != 1 {
		t.Errorf("Len() = %d after one id, want 1", got)
	}
	if got := w.Bytes(); got != 10 {
		t.Errorf("Bytes() = %d after five calls with a 2-byte id, want 10", got)
	}
}

func TestWorker_ProcessGrowsMap(t *testing.T) {
	w := NewWorker()
	for i := range 1000 {
		w.Process("user-" + strconv.Itoa(i))
	}
	if got := w.Len(); got != 1000 {
		t.Errorf("Len() = %d after 1000 distinct ids, want 1000 (nothing evicted)", got)
	}
}

func TestWorker_ProcessReturnsCopy(t *testing.T) {
	w := NewWorker()
	first := w.Process("xy")
	first[0] = 'Z'
	if got := w.Process("xy"); string(got) != "xyxy" {
		t.Errorf("second Process after modifying the first result = %q, want %q", got, "xyxy")
	}
	a, b := w.Process("q"), w.Process("q")
	a[0] = 'Z'
	if string(b) != "qq" {
		t.Errorf("results share memory: modifying one changed the other to %q", b)
	}
}

func TestWorker_ProcessConcurrent(t *testing.T) {
	w := NewWorker()
	const goroutines, calls, ids = 8, 200, 10
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				id := "id-" + strconv.Itoa((g+i)%ids)
				got := w.Process(id)
				if len(got)%len(id) != 0 || !bytes.HasPrefix(got, []byte(id)) {
					t.Errorf("Process(%q) = %q, want repetitions of the id", id, got)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := w.Len(); got != ids {
		t.Errorf("Len() = %d, want %d", got, ids)
	}
	if got, want := w.Bytes(), goroutines*calls*len("id-0"); got != want {
		t.Errorf("Bytes() = %d, want %d: every call appends its id once", got, want)
	}
}

// BenchmarkWorker_Process processes ids drawn from a fixed set of 1000; the
// same benchmark runs in package optimizedcache.
func BenchmarkWorker_Process(b *testing.B) {
	ids := benchIDs()
	w := NewWorker()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		w.Process(ids[i%len(ids)])
		i++
	}
}

// BenchmarkWorker_ProcessParallel is BenchmarkWorker_Process from
// GOMAXPROCS goroutines.
func BenchmarkWorker_ProcessParallel(b *testing.B) {
	ids := benchIDs()
	w := NewWorker()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			w.Process(ids[i%len(ids)])
			i += 7
		}
	})
}

// benchIDs returns 1000 ids in a shuffled but fixed order.
func benchIDs() []string {
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = "user-" + strconv.Itoa((i*7919)%100000)
	}
	return ids
}
