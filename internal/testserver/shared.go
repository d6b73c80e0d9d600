package testserver

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// Stopper is a server a test started, which it stops.
type Stopper interface{ Stop() error }

// ForTest starts a server with start for the test, and stops it at the
// test's end. It fails the test if the server cannot start.
func ForTest[S Stopper](t testing.TB, start func() (S, error)) S {
	t.Helper()
	s, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// Shared is a test binary's one server of a kind, started by the first
// Get and stopped by Stop, from TestMain once the tests have run.
type Shared[S Stopper] struct {
	mu      sync.Mutex
	s       S
	started bool
	err     error
}

// Get returns the server, starting it with start on the first call. It
// fails the test if the server could not start (every later call fails
// alike, without trying again).
func (sh *Shared[S]) Get(t testing.TB, start func() (S, error)) S {
	t.Helper()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.started {
		sh.s, sh.err = start()
		sh.started = true
	}
	if sh.err != nil {
		t.Fatal(sh.err)
	}
	return sh.s
}

// Stop stops the server Get started, if it did.
func (sh *Shared[S]) Stop() error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.started || sh.err != nil {
		sh.started, sh.err = false, nil
		return nil
	}
	sh.started = false
	return sh.s.Stop()
}

// Main runs a test binary's tests, then stop (the shared servers'
// StopShared), then checks that no goroutine (a process waiter, a
// connection) is left behind, and exits.
func Main(m *testing.M, stop ...func() error) {
	code := m.Run()
	for _, f := range stop {
		if err := f(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
