package leakycache

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/heapscope/heapscope/examples/internal/cachetest"
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

// TestWorker_ProcessReturnsCopy runs the suite of package cachetest; here an
// id's second call returns it twice.
func TestWorker_ProcessReturnsCopy(t *testing.T) {
	cachetest.TestWorkerReturnsCopy(t, NewWorker(), cachetest.Doubled)
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

// BenchmarkWorker_Process processes the ids of cachetest.IDs; the same
// benchmark runs in package optimizedcache.
func BenchmarkWorker_Process(b *testing.B) {
	cachetest.BenchmarkProcess(b, NewWorker())
}

// BenchmarkWorker_ProcessParallel is BenchmarkWorker_Process from
// GOMAXPROCS goroutines.
func BenchmarkWorker_ProcessParallel(b *testing.B) {
	cachetest.BenchmarkProcessParallel(b, NewWorker())
}
