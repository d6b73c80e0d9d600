package shared

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heapscope/heapscope/internal/store"
)

// pending is a capture in progress: a directory under the cache's .tmp.
type pending struct {
	s      *Store
	kind   store.Kind
	target string
	dir    string

	mu   sync.Mutex
	done bool
}

// Begin starts a capture: a fresh local directory to write the run into.
func (s *Store) Begin(kind store.Kind, target string) (store.Pending, error) {
	if err := store.CheckKind(kind, target); err != nil {
		return nil, err
	}
	var b [8]byte
	rand.Read(b[:])
	dir := filepath.Join(s.cache.dir, store.TempDir, string(kind)+"-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("begin capture of %s: %w", target, err)
	}
	return &pending{s: s, kind: kind, target: target, dir: dir}, nil
}

func (p *pending) Dir() string { return p.dir }

func (p *pending) finish() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return false
	}
	p.done = true
	return true
}

func (p *pending) Abandon() error {
	if !p.finish() {
		return nil
	}
	if err := os.RemoveAll(p.dir); err != nil {
		return fmt.Errorf("abandon capture of %s: %w", p.target, err)
	}
	return nil
}

// Commit takes the run's name, uploads its files, then indexes it in one
// transaction (the package doc has the order and why).
func (p *pending) Commit(runDir string, e store.Entry) (store.Entry, error) {
	return p.commit(runDir, e, nil)
}

// Guard is checked in the transaction that indexes a commit, after the
// entry's rows are added: an error from it rolls the commit back. An
// error made by Refuse is final: the commit fails with it at once, its
// objects are removed and its name freed. Any other error is a failure
// like the index's own, tried again. The fleet's claims are kept this
// way (internal/fleet: Member.Done).
type Guard func(ctx context.Context, tx pgx.Tx) error

// Refuse marks a Guard's error as a refusal, final (errors.Is and As
// still see err).
func Refuse(err error) error { return refusal{err} }

// CommitGuarded commits a capture begun by a shared store's Begin as its
// Commit does, storing it only when guard passes in the index
// transaction.
func CommitGuarded(p store.Pending, runDir string, e store.Entry, guard Guard) (store.Entry, error) {
	sp, ok := p.(*pending)
	if !ok {
		return store.Entry{}, fmt.Errorf("commit capture: %T is not a shared store's capture", p)
	}
	return sp.commit(runDir, e, guard)
}

// commitTimeout bounds a commit, its retries included: well under
// orphanAge, so that Retain never takes a commit in progress for one a
// crash interrupted.
const commitTimeout = 10 * time.Minute

// commitAttempts is how many times a commit's upload and its index
// transaction are tried before the capture is given up.
const commitAttempts = 3

// refusal is a Guard's refusal (Refuse): final, never retried.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

func (p *pending) commit(runDir string, e store.Entry, guard Guard) (store.Entry, error) {
	fail := func(err error) (store.Entry, error) {
		return store.Entry{}, fmt.Errorf("commit capture of %s: %w", p.target, oneLine{err})
	}
	abs, err := filepath.Abs(runDir)
	if err != nil {
		return fail(err)
	}
	if rel, err := filepath.Rel(p.dir, abs); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fail(fmt.Errorf("%s is not inside the capture's directory %s", runDir, p.dir))
	}
	pr, err := store.Prepare(abs, p.kind, p.target, e, p.s.now())
	if err != nil {
		return fail(err)
	}
	if !p.finish() {
		return fail(errors.New("capture already committed or abandoned"))
	}
	defer os.RemoveAll(p.dir)
	ctx, cancel := context.WithTimeout(context.Background(), p.s.commitTimeout)
	defer cancel()
	if pr.Entry.Path, err = p.s.takeName(ctx, pr.Base); err != nil {
		return fail(err)
	}
	if err := retry(ctx, func() error { return p.s.objects.putDir(ctx, abs, pr.Entry.Path) }); err != nil {
		// The name stays taken: a request cut off by the deadline may
		// still land under it. Retain removes it and its objects once
		// it is old.
		return fail(fmt.Errorf("%w (Retain removes what was uploaded under %s)", err, pr.Entry.Path))
	}
	if err := retry(ctx, func() error { return p.s.index(ctx, &pr, guard) }); err != nil {
		// A transaction whose answer was lost may yet commit: settle it
		// before removing anything.
		stored, dropErr := p.s.dropUnindexed(pr.Entry.Path)
		switch {
		case stored:
			e, ok, err := p.s.EntryAt(pr.Entry.Path)
			if !ok || err != nil {
				return fail(fmt.Errorf("index %s: stored, but its entry cannot be read: %v", pr.Entry.Path, err))
			}
			pr.Entry = e
		case dropErr != nil:
			return fail(fmt.Errorf("index %s: %w (whether it was stored is unknown: %v)", pr.Entry.Path, err, dropErr))
		default:
			return fail(fmt.Errorf("index %s: %w", pr.Entry.Path, err))
		}
	}
	// The run is at hand: keep it in the cache rather than download it
	// again for the first reader.
	p.s.cache.adopt(abs, pr.Entry.Path, pr.Entry.Bytes)
	return pr.Entry, nil
}

// retry calls f until it succeeds, commitAttempts times at most, a
// second and then two apart, unless a guard refused or ctx ended.
func retry(ctx context.Context, f func() error) error {
	var err error
	for attempt := range commitAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return errors.Join(err, ctx.Err())
			case <-time.After(time.Duration(attempt) * time.Second):
			}
		}
		if err = f(); err == nil || errors.As(err, new(refusal)) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// dropUnindexed removes the objects and the name of a run whose index
// transaction failed, unless that transaction committed after all
// (stored). It locks the name first, which waits for a transaction still
// holding it through its entry's reference, then looks for the entry in
// a statement of its own, whose snapshot sees that transaction's
// outcome. What it cannot settle, Retain removes as an orphan.
func (s *Store) dropUnindexed(path string) (stored bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT 1 FROM names WHERE path = $1 FOR UPDATE", path); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM entries WHERE path = $1)", path).Scan(&stored); err != nil || stored {
			return err
		}
		if err := s.objects.deleteRuns(ctx, []string{path}); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "DELETE FROM names WHERE path = $1", path)
		return err
	})
	return stored, err
}

// takeName takes the first of base, base-2, base-3… that no run has.
func (s *Store) takeName(ctx context.Context, base string) (string, error) {
	for n := 1; n < 10000; n++ {
		name := base
		if n > 1 {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		tag, err := s.pool.Exec(ctx, "INSERT INTO names (path) VALUES ($1) ON CONFLICT DO NOTHING", name)
		if err != nil {
			return "", fmt.Errorf("take the name %s: %w", name, err)
		}
		if tag.RowsAffected() == 1 {
			return name, nil
		}
	}
	return "", fmt.Errorf("take a name for %s: 10000 taken", base)
}

// index adds a prepared entry, its findings and points in one
// transaction, and fills its ID; guard, when not nil, is checked in the
// transaction before it commits.
func (s *Store) index(ctx context.Context, pr *store.Prepared, guard Guard) error {
	e := &pr.Entry
	labels, err := json.Marshal(orEmpty(e.Labels))
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tid, err := targetID(ctx, tx, e.Target)
		if err != nil {
			return err
		}
		var trigExpr, trigUnit *string
		var trigValue, trigThreshold, capture *float64
		if t := e.Trigger; t != nil {
			trigExpr, trigUnit, trigValue, trigThreshold = &t.Expr, &t.Unit, &t.Value, &t.Threshold
		}
		if e.CaptureSeconds != 0 {
			capture = &e.CaptureSeconds
		}
		var load *float64
		if e.LoadRate != 0 {
			load = &e.LoadRate
		}
		var slot *int64
		if !e.Slot.IsZero() {
			ns := e.Slot.UnixNano()
			slot = &ns
		}
		err = tx.QueryRow(ctx, `INSERT INTO entries (kind, target_id, time_ns, end_ns, path, status, bytes,
			scheduled, before_oom, labels, trigger_expr, trigger_value, trigger_threshold, trigger_unit, capture_seconds, load_rate, slot_ns)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) RETURNING id`,
			string(e.Kind), tid, e.Time.UnixNano(), pr.End.UnixNano(), e.Path, e.Status, e.Bytes,
			e.Scheduled, e.BeforeOOM, labels, trigExpr, trigValue, trigThreshold, trigUnit, capture, load, slot).Scan(&e.ID)
		if err != nil {
			return err
		}
		var batch pgx.Batch
		if err := addSightings(ctx, tx, &batch, e.ID, tid, pr.Findings); err != nil {
			return err
		}
		for _, v := range pr.Points {
			batch.Queue("INSERT INTO points (target_id, metric_id, time_ns, entry_id, value) VALUES ($1, $2, $3, $4, $5)",
				tid, v.ID, pr.End.UnixNano(), e.ID, v.Value)
		}
		if batch.Len() > 0 {
			if err := tx.SendBatch(ctx, &batch).Close(); err != nil {
				return err
			}
		}
		if guard != nil {
			return guard(ctx, tx)
		}
		return nil
	})
}

// addSightings indexes an entry's findings: each one's problem (added,
// or its latest title and evidence, its span and its count of captures
// brought up to date; in the order of their keys, so that two commits
// never wait on each other's rows), then, queued in batch, one sighting
// per finding, in order.
func addSightings(ctx context.Context, tx pgx.Tx, batch *pgx.Batch, entryID, tid int64, fs []store.Finding) error {
	ids := map[store.ProblemKey]int64{}
	for _, i := range store.ProblemOrder(fs) {
		f := fs[i]
		k := store.KeyOf(f)
		ns := f.Time.UnixNano()
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO problems (target_id, cause, kind, location, title, evidence, first_ns, last_ns, captures)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7, 1)
			ON CONFLICT (target_id, cause, kind, location) DO UPDATE SET
				title = CASE WHEN EXCLUDED.last_ns >= problems.last_ns THEN EXCLUDED.title ELSE problems.title END,
				evidence = CASE WHEN EXCLUDED.last_ns >= problems.last_ns THEN EXCLUDED.evidence ELSE problems.evidence END,
				first_ns = LEAST(problems.first_ns, EXCLUDED.first_ns),
				last_ns = GREATEST(problems.last_ns, EXCLUDED.last_ns),
				captures = problems.captures + 1
			RETURNING id`,
			tid, k.Cause, k.Kind, k.Where, f.Title, store.EvidenceText(f.Evidence), ns).Scan(&id)
		if err != nil {
			return err
		}
		ids[k] = id
	}
	for i, f := range fs {
		batch.Queue("INSERT INTO sightings (entry_id, problem_id, ord, severity) VALUES ($1, $2, $3, $4)",
			entryID, ids[store.KeyOf(f)], i, f.Severity)
	}
	return nil
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// targetID returns the id of a target's row, adding it when new.
func targetID(ctx context.Context, tx pgx.Tx, key string) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO targets (key, slug) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET key = EXCLUDED.key RETURNING id`, key, store.TargetSlug(key)).Scan(&id)
	return id, err
}

// Ingest stores a copy of an existing run directory.
func (s *Store) Ingest(runDir string, e store.Entry) (store.Entry, error) {
	return store.IngestCopy(s, runDir, e)
}
