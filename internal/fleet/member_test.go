package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/fleet"
	"github.com/heapscope/heapscope/internal/store/shared"
	"github.com/heapscope/heapscope/internal/testserver"
	"github.com/heapscope/heapscope/internal/testserver/pgtest"
	"github.com/heapscope/heapscope/internal/testserver/s3test"
)

func TestMain(m *testing.M) { testserver.Main(m, pgtest.StopShared, s3test.StopShared) }

// fleetStore opens a shared store over a fresh database, whose
// migrations make the fleet's tables.
func fleetStore(t *testing.T) *shared.Store {
	t.Helper()
	srv := s3test.Shared(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	s, err := shared.Open(t.Context(), shared.Options{Postgres: pgtest.Shared(t).NewDatabase(t), CacheDir: t.TempDir(),
		Objects: shared.Objects{Bucket: srv.NewBucket(t), Endpoint: srv.Endpoint, Region: srv.Region, PathStyle: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// join makes a member that keeps its lease until the test ends or stop
// is called.
func join(t *testing.T, s *shared.Store, id string) (m *fleet.Member, stop func()) {
	t.Helper()
	m, err := fleet.Join(t.Context(), s.Pool(), fleet.Options{ID: id, Lease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return m, stop
}

// waitMembers waits until m sees the members want.
func waitMembers(t *testing.T, m *fleet.Member, want string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); fmt.Sprint(m.Members()) != want; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s sees members %v, want %s", m.ID(), m.Members(), want)
		}
	}
}

func TestMember_claimsAndLeases(t *testing.T) {
	s := fleetStore(t)
	a, stopA := join(t, s, "a")
	b, _ := join(t, s, "b")
	waitMembers(t, a, "[a b]")
	waitMembers(t, b, "[a b]")
	if _, err := fleet.Join(t.Context(), s.Pool(), fleet.Options{ID: "a", Lease: time.Second}); err == nil {
		t.Error("a second member named a joined")
	}

	// Each target is owned by exactly one member.
	for i := range 200 {
		key := fmt.Sprintf("http://10.0.0.%d:6060/debug/pprof/", i)
		if a.Owns(key) == b.Owns(key) {
			t.Fatalf("%s: owned by a %v, by b %v", key, a.Owns(key), b.Owns(key))
		}
	}

	ctx := t.Context()
	slot := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	claim := func(m *fleet.Member, key string, at time.Time, want bool) {
		t.Helper()
		if got, err := m.Claim(ctx, key, at); err != nil || got != want {
			t.Errorf("%s claims %s at %s: %v, %v; want %v", m.ID(), key, at.Format(time.TimeOnly), got, err, want)
		}
	}
	claim(a, "k", slot, true)
	claim(b, "k", slot, false) // a is alive and not done
	claim(a, "k", slot, true)  // its own claim, again
	if err := a.Done(ctx, "k", slot); err != nil {
		t.Fatal(err)
	}
	claim(a, "k", slot, false) // done: no one captures it again
	claim(b, "k", slot, false)

	// A claim released after a failed capture is free again.
	claim(b, "k", slot.Add(time.Minute), true)
	if err := b.Release(ctx, "k", slot.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	claim(a, "k", slot.Add(time.Minute), true)

	// a leaves (its Run ends) with a claim not done: b takes it over, and
	// owns every target.
	claim(a, "k", slot.Add(2*time.Minute), true)
	stopA()
	waitMembers(t, b, "[b]")
	claim(b, "k", slot.Add(2*time.Minute), true)
	if !b.Owns("anything") {
		t.Error("b alone does not own every target")
	}

	// c dies without leaving (it never heartbeats again): its lease runs
	// out by the database's clock, and its claims with it.
	c, err := fleet.Join(ctx, s.Pool(), fleet.Options{ID: "c", Lease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	claim(c, "k", slot.Add(3*time.Minute), true)
	claim(b, "k", slot.Add(3*time.Minute), false)
	time.Sleep(1200 * time.Millisecond)
	claim(b, "k", slot.Add(3*time.Minute), true)
	waitMembers(t, b, "[b]")
	if c.Owns("anything") {
		t.Error("c owns a target though its lease ran out")
	}
}
