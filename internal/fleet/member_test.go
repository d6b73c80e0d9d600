package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heapscope/heapscope/internal/fleet"
	"github.com/heapscope/heapscope/internal/store"
	"github.com/heapscope/heapscope/internal/store/shared"
	"github.com/heapscope/heapscope/internal/store/storetest"
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
	// Three seconds: a heartbeat every second keeps it through a
	// starved machine's pauses.
	m, err := fleet.Join(t.Context(), s.Pool(), fleet.Options{ID: id, Lease: 3 * time.Second})
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
	testserver.Until(t, time.Minute, m.ID()+" to see the members "+want, func() bool { return fmt.Sprint(m.Members()) == want })
}

// waitExpired waits until the lease of the member id has run out by the
// database's clock.
func waitExpired(t *testing.T, s *shared.Store, id string) {
	t.Helper()
	testserver.Until(t, time.Minute, id+"'s lease to run out", func() bool {
		var live bool
		if err := s.Pool().QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM members WHERE id = $1 AND expires > now())", id).Scan(&live); err != nil {
			t.Fatal(err)
		}
		return !live
	})
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
	if err := pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error { return a.Done(ctx, tx, "k", slot) }); err != nil {
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
	c, err := fleet.Join(ctx, s.Pool(), fleet.Options{ID: "c", Lease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	claim(c, "k", slot.Add(3*time.Minute), true)
	claim(b, "k", slot.Add(3*time.Minute), false)
	waitExpired(t, s, "c")
	claim(b, "k", slot.Add(3*time.Minute), true)
	waitMembers(t, b, "[b]")
	if c.Owns("anything") {
		t.Error("c owns a target though its lease ran out")
	}
}

// TestMember_captureCutOffIsNotStored follows a watcher whose lease runs
// out during a capture (a database outage longer than the lease): the
// other takes its claim over and captures the slot too, and of the two
// captures only the one holding the claim is stored. Likewise a bundle
// is stored only by the target's owner at commit.
func TestMember_captureCutOffIsNotStored(t *testing.T) {
	s := fleetStore(t)
	ctx := t.Context()
	// a never heartbeats after joining: its lease runs out as if the
	// database had been out of its reach since.
	a, err := fleet.Join(ctx, s.Pool(), fleet.Options{ID: "a", Lease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := join(t, s, "b")
	slot := storetest.At(0)
	const key = "http://127.0.0.1:6060/debug/pprof/"
	if mine, err := a.Claim(ctx, key, slot); err != nil || !mine {
		t.Fatalf("a claims the slot: %v, %v", mine, err)
	}
	pa := begin(t, s, key)
	taken := func(want bool, why string) {
		t.Helper()
		if got, err := b.Taken(ctx, key, slot); err != nil || got != want {
			t.Errorf("%s: b says the slot is taken: %v, %v; want %v", why, got, err, want)
		}
	}
	taken(true, "claimed by a, alive")

	waitMembers(t, b, "[b]")
	taken(false, "claimed by a, its lease run out")
	if mine, err := b.Claim(ctx, key, slot); err != nil || !mine {
		t.Fatalf("b takes the claim of a, whose lease ran out: %v, %v", mine, err)
	}
	if a.Owns(key) {
		t.Error("a owns the target though its lease ran out")
	}
	_, err = commitSlot(pa, a, key, slot)
	if !errors.Is(err, fleet.ErrClaimLost) {
		t.Errorf("a commits the slot b took over: %v, want %v", err, fleet.ErrClaimLost)
	}
	if err := a.Holds(ctx, mustTx(t, s), key); !errors.Is(err, fleet.ErrNotOwner) {
		t.Errorf("a holds the target with its lease run out: %v, want %v", err, fleet.ErrNotOwner)
	}

	pb := begin(t, s, key)
	stored, err := commitSlot(pb, b, key, slot)
	if err != nil {
		t.Fatalf("b commits the slot it holds: %v", err)
	}
	if err := b.Holds(ctx, mustTx(t, s), key); err != nil {
		t.Errorf("b, alone alive, does not hold the target: %v", err)
	}
	h, err := s.History(store.Query{Target: key})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != 1 || h.Runs[0].Path != stored.Path {
		t.Errorf("stored runs of the slot: %+v, want b's alone (%s)", h.Runs, stored.Path)
	}
	taken(true, "captured")
	// Done once: the slot is no one's to capture again.
	if mine, _ := b.Claim(ctx, key, slot); mine {
		t.Error("the slot is claimed again after its capture was stored")
	}

	// a's lease has run out, but no one took its next claim over: its
	// capture is that slot's only one, and is stored.
	next := slot.Add(time.Minute)
	if mine, err := a.Claim(ctx, key, next); err != nil || !mine {
		t.Fatalf("a claims a free slot: %v, %v", mine, err)
	}
	pn := begin(t, s, key)
	if _, err := commitSlot(pn, a, key, next); err != nil {
		t.Errorf("a commits the slot no one took over: %v", err)
	}
}

// begin begins a capture of the target into s, the leaky fixture written
// into it, abandoned when the test ends unless committed.
func begin(t *testing.T, s *shared.Store, key string) store.Pending {
	t.Helper()
	p, err := s.Begin(store.KindRun, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Abandon() })
	storetest.WriteFixture(t, "leaky", p.Dir())
	return p
}

// commitSlot commits a capture of the target's slot as a watcher of the
// fleet does: stored only if m still holds the slot's claim.
func commitSlot(p store.Pending, m *fleet.Member, key string, slot time.Time) (store.Entry, error) {
	return shared.CommitGuarded(p, p.Dir(), store.Entry{Time: slot, Scheduled: true},
		func(ctx context.Context, tx pgx.Tx) error { return m.Done(ctx, tx, key, slot) })
}

// mustTx begins a transaction that ends with the test.
func mustTx(t *testing.T, s *shared.Store) pgx.Tx {
	t.Helper()
	tx, err := s.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	return tx
}

// TestMember_ownsNothingOnceItsLeaseRunsOut checks that a member whose
// heartbeats stop getting through drops its targets when its lease runs
// out by its own clock, without waiting for a heartbeat to fail, and
// says so on Changes.
func TestMember_ownsNothingOnceItsLeaseRunsOut(t *testing.T) {
	s := fleetStore(t)
	const lease = time.Second
	joined := time.Now() // before the lease is taken: it ends no sooner
	m, err := fleet.Join(t.Context(), s.Pool(), fleet.Options{ID: "alone", Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Owns("k") {
		t.Fatal("a member alone does not own a target")
	}
	<-m.Changes() // the members read on joining
	// No Run: no heartbeat renews the lease.
	select {
	case <-m.Changes():
	case <-time.After(3 * lease):
		t.Fatalf("no change told %s after its lease of %s ran out", time.Since(joined).Round(time.Millisecond), lease)
	}
	if since := time.Since(joined); since < lease {
		t.Errorf("the targets were dropped %s after joining, before the lease of %s ran out", since, lease)
	}
	if m.Owns("k") || m.Members() != nil {
		t.Errorf("a member whose lease ran out owns k: %v, sees members %v", m.Owns("k"), m.Members())
	}
}

// TestMember_oneNameTwoProcesses follows a watcher restarted under its
// name while the old process, cut off past its lease, still runs: the
// new one takes the name over, the old one can neither renew it nor
// store the slot it was capturing, though the claim bears the name.
func TestMember_oneNameTwoProcesses(t *testing.T) {
	s := fleetStore(t)
	ctx := t.Context()
	var oldLog testserver.Buffer
	old, err := fleet.Join(ctx, s.Pool(), fleet.Options{ID: "w", Lease: 2 * time.Second, Log: slog.New(slog.NewTextHandler(&oldLog, nil))})
	if err != nil {
		t.Fatal(err)
	}
	slot := storetest.At(0)
	const key = "http://127.0.0.1:6060/debug/pprof/"
	if mine, err := old.Claim(ctx, key, slot); err != nil || !mine {
		t.Fatalf("the old process claims the slot: %v, %v", mine, err)
	}
	if _, err := fleet.Join(ctx, s.Pool(), fleet.Options{ID: "w", Lease: time.Second}); err == nil ||
		!strings.Contains(err.Error(), "a live member has that name") {
		t.Errorf("a second process joined under a live name: %v", err)
	}
	waitExpired(t, s, "w")
	restarted, stop := join(t, s, "w")
	defer stop()
	waitMembers(t, restarted, "[w]")

	// The old one's heartbeat gets through again: it must not take the
	// name back.
	oldCtx, cancel := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { old.Run(oldCtx); close(ran) }()
	testserver.Until(t, time.Minute, "the old process's heartbeat refused", func() bool {
		return strings.Contains(oldLog.String(), "fleet heartbeat failed")
	})
	if old.Owns(key) {
		t.Error("the old process owns the target though another holds its name")
	}
	err = pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error { return old.Done(ctx, tx, key, slot) })
	if !errors.Is(err, fleet.ErrClaimLost) {
		t.Errorf("the old process marks its slot done under a name another holds: %v, want %v", err, fleet.ErrClaimLost)
	}
	if err := old.Holds(ctx, mustTx(t, s), key); !errors.Is(err, fleet.ErrNotOwner) {
		t.Errorf("the old process holds the target: %v, want %v", err, fleet.ErrNotOwner)
	}
	if !restarted.Owns(key) {
		t.Error("the restarted process does not own the target")
	}
	if err := restarted.Holds(ctx, mustTx(t, s), key); err != nil {
		t.Errorf("the restarted process does not hold the target: %v", err)
	}
	// The old process's Run leaves on its way out: that must not remove
	// the restarted one's lease.
	cancel()
	<-ran
	if err := restarted.Holds(ctx, mustTx(t, s), key); err != nil {
		t.Errorf("after the old process left, the restarted one does not hold the target: %v", err)
	}
}
