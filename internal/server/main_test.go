package server_test

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heapscope/heapscope/examples"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/watch"
	"github.com/heapscope/heapscope/internal/watch/config"
)

// exampleEnv makes the test binary serve a bundled example: the store the
// tests read is filled by a real watch of a real service.
const exampleEnv = "HEAPSCOPE_SERVER_TEST_EXAMPLE"

func TestMain(m *testing.M) {
	if name := os.Getenv(exampleEnv); name != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := examples.Main(ctx, name, os.Args[1:], os.Getenv, os.Stderr)
		stop()
		os.Exit(code)
	}
	code := m.Run()
	if fill.st != nil {
		fill.st.Close()
		os.RemoveAll(filepath.Dir(fill.st.Dir()))
	}
	closeWatchedStore()
	os.Exit(code)
}

// filled is a store watch filled once for all the tests of the package.
type filled struct {
	st     *store.Embedded
	target string        // the watched example's key
	runs   []store.Entry // newest first
	bundle store.Entry   // a trigger's bundle, marked as before an OOM kill
}

var (
	fillOnce sync.Once
	fill     filled
	fillErr  error
)

// filledStore returns a store holding two runs of the leaky example
// captured by watch --once, and a bundle of a memory trigger marked as
// the last capture before an OOM kill.
func filledStore(t *testing.T) filled {
	t.Helper()
	fillOnce.Do(func() { fill, fillErr = makeStore() })
	if fillErr != nil {
		t.Fatal(fillErr)
	}
	return fill
}

func makeStore() (filled, error) {
	dir, err := os.MkdirTemp("", "heapscope-server-test-")
	if err != nil {
		return filled{}, err
	}
	os.Setenv(exampleEnv, "leaky")
	svc, err := examples.Start(context.Background(), "leaky", os.Args[0], "-addr", "127.0.0.1:0")
	os.Unsetenv(exampleEnv)
	if err != nil {
		return filled{}, err
	}
	defer svc.Stop()
	st, err := store.Open(filepath.Join(dir, "store"))
	if err != nil {
		return filled{}, err
	}
	cfg, err := config.ForURLs([]string{svc.URL}, config.Settings{Window: time.Second})
	if err != nil {
		return filled{}, err
	}
	w, err := watch.New(watch.Options{Config: cfg, Store: st, Version: "test"})
	if err != nil {
		return filled{}, err
	}
	for range 2 {
		if err := w.Once(context.Background()); err != nil {
			return filled{}, err
		}
	}
	h, err := st.History(store.Query{})
	if err != nil || len(h.Runs) != 2 {
		return filled{}, err
	}
	f := filled{st: st, target: h.Runs[0].Target, runs: h.Runs}
	trig := &store.Trigger{Expr: "memory>=80%", Value: 83.5, Threshold: 80, Unit: "percent"}
	if f.bundle, err = st.Ingest(filepath.Join(st.Dir(), h.Runs[0].Path), store.Entry{Kind: store.KindBundle,
		Target: f.target, Labels: h.Runs[0].Labels, Trigger: trig, CaptureSeconds: 2.5, Time: h.Runs[0].Time.Add(time.Millisecond)}); err != nil {
		return filled{}, err
	}
	if _, _, err := st.MarkBeforeOOM(f.target, f.bundle.Time.Add(time.Minute)); err != nil {
		return filled{}, err
	}
	f.bundle.BeforeOOM = true
	return f, nil
}
