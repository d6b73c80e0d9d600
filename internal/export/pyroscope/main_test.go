package pyroscope

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heapscope/heapscope/internal/run"
	"github.com/heapscope/heapscope/internal/target"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if captured.dir != "" {
		os.RemoveAll(captured.parent)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

// captured is one real capture, made once for the package's tests.
var captured struct {
	once   sync.Once
	parent string
	dir    string
	err    error
}

// realCapture returns the run directory of a capture made as watch makes
// one (lean, three heap snapshots, CPU, block and mutex over a 1 s window)
// of this test process's own net/http/pprof, while it allocates and
// contends a lock: real profiles of a real Go runtime.
func realCapture(t *testing.T) string {
	t.Helper()
	captured.once.Do(func() {
		captured.parent, captured.err = os.MkdirTemp("", "heapscope-pyroscope-test-")
		if captured.err != nil {
			return
		}
		runtime.SetMutexProfileFraction(1)
		runtime.SetBlockProfileRate(1)
		defer runtime.SetMutexProfileFraction(0)
		defer runtime.SetBlockProfileRate(0)

		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		srv := httptest.NewServer(mux)
		defer srv.Close()

		ctx, cancel := context.WithCancel(context.Background())
		var work sync.WaitGroup
		work.Go(func() { busy(ctx) })
		_, captured.dir, captured.err = run.Profile(ctx, run.Config{
			Target:    target.Options{BaseURL: srv.URL, Timeout: 10 * time.Second},
			Duration:  time.Second,
			Snapshots: 3,
			CPU:       true,
			Extra:     []string{"block", "mutex"},
			OutDir:    captured.parent,
			Name:      "capture",
			Lean:      true,
			Version:   "test",
		})
		cancel()
		work.Wait()
		srv.Client().CloseIdleConnections()
	})
	if captured.err != nil {
		t.Fatalf("make a real capture: %v", captured.err)
	}
	return captured.dir
}

// sink keeps what busy allocates alive for a while: the heap has live
// objects and allocations of its own.
var sink [][]byte

// busy allocates, holds some of it, and contends a mutex until ctx ends.
func busy(ctx context.Context) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				mu.Lock()
				b := make([]byte, 64<<10)
				if i%16 == 0 {
					sink = append(sink, b)
					if len(sink) > 256 {
						sink = sink[1:]
					}
				}
				time.Sleep(50 * time.Microsecond)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
