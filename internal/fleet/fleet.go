// Package fleet lets several watchers share one store's targets. Each
// watcher is a member with a lease in PostgreSQL (the shared store's
// database: table members), renewed by a heartbeat; the live members are
// those whose lease has not expired by the database's clock. Every
// target belongs to one live member, chosen by rendezvous hashing
// (Owner): when a member joins or leaves, only the targets that hash to
// it move. A member that cannot renew its lease owns nothing until it
// can, so that a watcher cut off from the database stops capturing
// rather than capture beside the one that took its targets over.
//
// Ownership alone cannot make each scheduled slot captured exactly once:
// for a moment around a move two members may both think they own a
// target. Claims settle it: a member captures a slot only after claiming
// it in the slots table, and a claim is taken over only when it is not
// done and its member's lease has expired (the member died mid-capture,
// or lost its lease to a long database outage). The claim is marked done
// in the transaction that indexes the capture (Done), which fails when
// the claim was taken over meanwhile: of two members that captured one
// slot, only the one holding the claim stores it.
package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heapscope/heapscope/internal/store/shared"
)

// DefaultLease is how long a member's lease lasts without a heartbeat:
// its targets move to the others within two of these after it dies.
const DefaultLease = 15 * time.Second

// claimsKept is how long claims on past slots are kept.
const claimsKept = 24 * time.Hour

// Options configure a membership.
type Options struct {
	// ID names the member; the host name and a random suffix when empty.
	ID string
	// Lease is how long the member's lease lasts (DefaultLease when
	// zero); it is renewed every third of it.
	Lease time.Duration
	// Log receives joins, leaves and lost leases; slog's default when nil.
	Log *slog.Logger
}

// Member is one watcher's membership of a fleet.
type Member struct {
	pool *pgxpool.Pool
	// beat is the heartbeat's connection, used by Run alone.
	beat *pgx.Conn
	id   string
	// incarnation tells this process from another given the same ID.
	incarnation string
	lease       time.Duration
	log         *slog.Logger

	mu      sync.Mutex
	members []string  // the live members, sorted; nil when this one's lease is lost
	renewed time.Time // when the lease was last renewed, by the local clock
	changes chan struct{}
	// expiry fires when the lease runs out unrenewed: the member owns
	// nothing from then, without waiting for a heartbeat to fail.
	expiry *time.Timer
}

// ErrClaimLost is Done's error when another member took the claim over:
// the capture must not be stored.
var ErrClaimLost = errors.New("the slot's claim was taken over by another member")

// ErrNotOwner is Holds' error when the target belongs to another member,
// or to none while this member's lease is lost.
var ErrNotOwner = errors.New("the target belongs to another member")

// Store is what a fleet needs of the store its watchers share: the
// PostgreSQL database it keeps its members and claims in, beside the
// store's index. The shared store is one; the embedded store is none.
type Store interface {
	Pool() *pgxpool.Pool
}

// Join takes a lease for a new member and reads the live members, so
// that Owns answers from the start; Run keeps the lease.
func Join(ctx context.Context, pool *pgxpool.Pool, o Options) (*Member, error) {
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Lease < time.Second {
		return nil, fmt.Errorf("join the fleet: a lease of %s is shorter than a second", o.Lease)
	}
	if o.ID == "" {
		o.ID = defaultID()
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	// The heartbeat has a connection of its own: a pool busy with the
	// store's commits must not delay it past the lease.
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("join the fleet as %s: %w", o.ID, shared.OneLine(err))
	}
	m := &Member{pool: pool, beat: conn, id: o.ID, incarnation: randomHex(), lease: o.Lease, log: o.Log,
		changes: make(chan struct{}, 1)}
	m.expiry = time.AfterFunc(time.Hour, m.expire)
	m.expiry.Stop()
	var left float64 // seconds the member of that name has left
	err = pool.QueryRow(ctx, `SELECT COALESCE(MAX(EXTRACT(EPOCH FROM expires - clock_timestamp())), 0)::float8
		FROM members WHERE id = $1`, m.id).Scan(&left)
	if err == nil && left > 0 {
		err = fmt.Errorf("a live member has that name: if it is this watcher restarted, it may join once its lease runs out, in %.0f s",
			math.Ceil(left))
	}
	if err == nil {
		err = m.heartbeat(ctx)
	}
	if err != nil {
		m.expiry.Stop()
		conn.Close(context.Background())
		return nil, fmt.Errorf("join the fleet as %s: %w", m.id, shared.OneLine(err))
	}
	m.log.Info("joined the fleet", "member", m.id, "members", len(m.Members()), "lease", m.lease)
	return m, nil
}

func defaultID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "watcher"
	}
	return host + "-" + randomHex()[:8]
}

func randomHex() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ErrNameTaken is a heartbeat's error when another process holds this
// member's name with a lease not expired: this one owns nothing.
var ErrNameTaken = errors.New("another process holds this member's name")

// ID returns the member's name.
func (m *Member) ID() string { return m.id }

// Lease returns the member's lease period.
func (m *Member) Lease() time.Duration { return m.lease }

// Run renews the lease and rereads the members every third of the lease
// until ctx ends, then leaves the fleet (its targets move at once).
func (m *Member) Run(ctx context.Context) {
	tick := time.NewTicker(m.lease / 3)
	defer tick.Stop()
	beats := 0
	for {
		select {
		case <-ctx.Done():
			m.expiry.Stop()
			m.leave()
			m.beat.Close(context.Background())
			return
		case <-tick.C:
		}
		if err := m.heartbeat(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("fleet heartbeat failed", "member", m.id, "err", shared.OneLine(err))
			m.expire()
		}
		if beats++; beats%100 == 0 {
			m.pool.Exec(ctx, "DELETE FROM slots WHERE claimed < now() - make_interval(secs => $1)", claimsKept.Seconds())
		}
	}
}

// expire drops every target when the lease has run out unrenewed, by
// the local clock (renewed is taken before the heartbeat's request, so
// the local lease ends no later than the database's).
func (m *Member) expire() {
	m.mu.Lock()
	lost := m.members != nil && time.Since(m.renewed) >= m.lease
	if lost {
		m.members = nil
	}
	m.mu.Unlock()
	if lost {
		m.log.Error("fleet lease lost: capturing nothing until it is renewed", "member", m.id)
		m.changed()
	}
}

// heartbeat renews the lease and reads the live members.
func (m *Member) heartbeat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.lease/2)
	defer cancel()
	start := time.Now()
	if m.beat.IsClosed() { // a heartbeat cut off by its timeout closes it
		conn, err := pgx.ConnectConfig(ctx, m.pool.Config().ConnConfig.Copy())
		if err != nil {
			return err
		}
		m.beat = conn
	}
	// Renew this incarnation's lease, or take over an expired one's.
	tag, err := m.beat.Exec(ctx, `INSERT INTO members (id, expires, incarnation)
		VALUES ($1, clock_timestamp() + make_interval(secs => $2), $3)
		ON CONFLICT (id) DO UPDATE SET expires = EXCLUDED.expires, incarnation = EXCLUDED.incarnation
		WHERE members.incarnation = EXCLUDED.incarnation OR members.expires <= clock_timestamp()`,
		m.id, m.lease.Seconds(), m.incarnation)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrNameTaken
	}
	rows, err := m.beat.Query(ctx, "SELECT id FROM members WHERE expires > now() ORDER BY id")
	if err != nil {
		return err
	}
	var live []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		live = append(live, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	same := slices.Equal(live, m.members)
	// A lease renewed more than a lease after the last renewal had run
	// out meanwhile (a process stopped, a machine suspended), whether or
	// not the expiry timer said so first: the others may have taken its
	// targets and claims.
	lapsed := m.members != nil && start.Sub(m.renewed) >= m.lease
	gap := start.Sub(m.renewed)
	m.members, m.renewed = live, start
	m.expiry.Reset(m.lease - time.Since(start))
	m.mu.Unlock()
	if lapsed {
		m.log.Error("fleet lease lost: it ran out unrenewed, and is renewed now", "member", m.id, "unrenewed_for", gap.Round(time.Millisecond))
	}
	if !same {
		m.log.Info("fleet members", "member", m.id, "members", live)
		m.changed()
	}
	return nil
}

// leave gives the lease up, so that the others take the targets over at
// their next heartbeat rather than when it expires.
func (m *Member) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := m.beat.Exec(ctx, "DELETE FROM members WHERE id = $1 AND incarnation = $2", m.id, m.incarnation); err != nil {
		m.log.Warn("leave the fleet", "member", m.id, "err", err)
		return
	}
	m.log.Info("left the fleet", "member", m.id)
}

func (m *Member) changed() {
	select {
	case m.changes <- struct{}{}:
	default:
	}
}

// Changes receives a value when the members change: the targets owned
// may have too.
func (m *Member) Changes() <-chan struct{} { return m.changes }

// Members returns the live members as last read, sorted.
func (m *Member) Members() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.members)
}

// Owns says whether this member captures the target with that key.
func (m *Member) Owns(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.members != nil && time.Since(m.renewed) > m.lease {
		return false // the lease may have expired: own nothing
	}
	return Owner(key, m.members) == m.id
}

// Owner returns the member that owns a target: the one with the highest
// hash of (member, key), so that a member's leaving moves only its own
// targets, spread over the others. "" when there are no members.
func Owner(key string, members []string) string {
	best, bestHash := "", uint64(0)
	for _, id := range members {
		h := fnv.New64a()
		h.Write([]byte(id))
		h.Write([]byte{0})
		h.Write([]byte(key))
		v := mix(h.Sum64())
		if best == "" || v > bestHash || (v == bestHash && id < best) {
			best, bestHash = id, v
		}
	}
	return best
}

// mix finishes a hash (splitmix64's finaliser), so that members whose
// names differ in a last character spread evenly.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Claim claims a target's scheduled slot for this member: true when it
// is this member's to capture. A slot already claimed is this member's
// only when the claim is its own and not done, or when its member's
// lease has expired before the capture was done.
func (m *Member) Claim(ctx context.Context, key string, slot time.Time) (bool, error) {
	var member string
	// clock_timestamp, not now(): the lease is judged when the row is,
	// not when the statement's snapshot was taken.
	err := m.pool.QueryRow(ctx, `INSERT INTO slots (target, slot_ns, member) VALUES ($1, $2, $3)
		ON CONFLICT (target, slot_ns) DO UPDATE SET member = EXCLUDED.member, claimed = clock_timestamp()
		WHERE NOT slots.done AND (slots.member = EXCLUDED.member OR
			NOT EXISTS (SELECT 1 FROM members m WHERE m.id = slots.member AND m.expires > clock_timestamp()))
		RETURNING member`, key, slot.UnixNano(), m.id).Scan(&member)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim the slot %s of %s: %w", slot.UTC().Format(time.RFC3339), key, shared.OneLine(err))
	}
	return member == m.id, nil
}

// Taken says whether a target's slot is in hand without this member:
// captured, or claimed by a live member, which is capturing it. What a
// member too late to claim a slot asks before counting it missed.
func (m *Member) Taken(ctx context.Context, key string, slot time.Time) (bool, error) {
	var taken bool
	err := m.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM slots s WHERE s.target = $1 AND s.slot_ns = $2
		AND (s.done OR EXISTS (SELECT 1 FROM members m WHERE m.id = s.member AND m.expires > clock_timestamp())))`,
		key, slot.UnixNano()).Scan(&taken)
	if err != nil {
		return false, fmt.Errorf("look up the slot %s of %s: %w", slot.UTC().Format(time.RFC3339), key, shared.OneLine(err))
	}
	return taken, nil
}

// Done marks a claimed slot captured, in tx: the transaction that
// indexes its capture, so that the capture is stored if and only if the
// claim is still this member's, and its name still this process's
// (ErrClaimLost otherwise), and no one takes the slot over once it is.
func (m *Member) Done(ctx context.Context, tx pgx.Tx, key string, slot time.Time) error {
	tag, err := tx.Exec(ctx, `UPDATE slots SET done = true WHERE target = $1 AND slot_ns = $2 AND member = $3 AND NOT done
		AND EXISTS (SELECT 1 FROM members WHERE id = $3 AND incarnation = $4)`,
		key, slot.UnixNano(), m.id, m.incarnation)
	if err != nil {
		return fmt.Errorf("mark the slot %s of %s done: %w", slot.UTC().Format(time.RFC3339), key, shared.OneLine(err))
	}
	if tag.RowsAffected() == 0 {
		return shared.Refuse(fmt.Errorf("mark the slot %s of %s done: %w", slot.UTC().Format(time.RFC3339), key, ErrClaimLost))
	}
	return nil
}

// Holds checks, in tx, that this member owns the target by the live
// members the database knows now (ErrNotOwner otherwise): what a capture
// that claims no slot (a trigger's bundle) is stored under, so that a
// member whose lease ran out during the capture does not store it.
func (m *Member) Holds(ctx context.Context, tx pgx.Tx, key string) error {
	rows, err := tx.Query(ctx, `SELECT id FROM members WHERE expires > clock_timestamp()
		AND (id <> $1 OR incarnation = $2)`, m.id, m.incarnation)
	var live []string
	if err == nil {
		live, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		return fmt.Errorf("check the owner of %s: %w", key, shared.OneLine(err))
	}
	if Owner(key, live) != m.id {
		return shared.Refuse(fmt.Errorf("check the owner of %s: %w", key, ErrNotOwner))
	}
	return nil
}

// Release gives up a claim not done (a capture that failed), so that
// another member may still capture the slot.
func (m *Member) Release(ctx context.Context, key string, slot time.Time) error {
	_, err := m.pool.Exec(ctx, "DELETE FROM slots WHERE target = $1 AND slot_ns = $2 AND member = $3 AND NOT done",
		key, slot.UnixNano(), m.id)
	if err != nil {
		return fmt.Errorf("release the slot %s of %s: %w", slot.UTC().Format(time.RFC3339), key, shared.OneLine(err))
	}
	return nil
}
