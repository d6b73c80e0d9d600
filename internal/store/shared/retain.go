package shared

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heapscope/heapscope/internal/store"
)

// retainBatch is how many entries one retention transaction removes, so
// that a large backlog never holds a long transaction nor a huge delete.
const retainBatch = 500

// orphanAge is how old a name with no entry must be before Retain takes
// it for an upload a crash interrupted, rather than one in progress.
const orphanAge = time.Hour

// Retain removes the entries the retention no longer keeps, oldest first,
// in batches: each batch's rows in one transaction (the entries, with
// their findings and points by cascade), then their objects, then their
// names. A crash between leaves names whose objects outlive their entry,
// which a later Retain removes as orphans. It also removes the series
// findings older than MaxAge and the orphans of interrupted commits.
//
// One retention runs at a time over a store, whichever process runs it
// (an advisory lock): every watcher of a fleet retains, and each would
// otherwise free the whole excess over MaxBytes, N watchers N times it.
// A Retain that finds another under way returns 0 at once. Its work
// goes through the connection holding the lock, the one connection it
// needs of the pool: waiting for a second one while holding the lock
// would stall a small pool, and every watcher's retention with it.
func (s *Store) Retain(r store.Retention) (int, error) {
	ctx := context.Background()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("retain: %w", oneLine{err})
	}
	defer conn.Release()
	var mine bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", retainLock).Scan(&mine); err != nil {
		return 0, fmt.Errorf("retain: %w", oneLine{err})
	}
	if !mine {
		return 0, nil
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", retainLock)
	return s.retain(ctx, conn, r)
}

// retainLock is the advisory lock key a retention holds.
const retainLock = 0x68656171 // "heaq"

// retain is Retain's work, through conn.
func (s *Store) retain(ctx context.Context, conn *pgxpool.Conn, r store.Retention) (int, error) {
	now := r.Now
	if now.IsZero() {
		now = s.now()
	}
	removed := 0
	if r.MaxAge > 0 {
		cutoff := now.Add(-r.MaxAge).UnixNano()
		for {
			n, err := s.removeBatch(ctx, conn, `SELECT id, path, bytes FROM entries WHERE time_ns < $1
				ORDER BY time_ns, id LIMIT `+fmt.Sprint(retainBatch), -1, cutoff)
			removed += n
			if err != nil {
				return removed, err
			}
			if n < retainBatch {
				break
			}
		}
		if _, err := conn.Exec(ctx, "DELETE FROM findings WHERE entry_id IS NULL AND time_ns < $1", cutoff); err != nil {
			return removed, fmt.Errorf("retain: %w", err)
		}
		if _, err := conn.Exec(ctx, "DELETE FROM events WHERE time_ns < $1", cutoff); err != nil {
			return removed, fmt.Errorf("retain: %w", err)
		}
	}
	if r.MaxBytes > 0 {
		for {
			var total int64
			if err := conn.QueryRow(ctx, "SELECT COALESCE(SUM(bytes), 0)::BIGINT FROM entries").Scan(&total); err != nil {
				return removed, fmt.Errorf("retain: store size: %w", oneLine{err})
			}
			if total <= r.MaxBytes {
				break
			}
			n, err := s.removeBatch(ctx, conn, "SELECT id, path, bytes FROM entries ORDER BY time_ns, id LIMIT "+fmt.Sprint(retainBatch), total-r.MaxBytes)
			removed += n
			if err != nil {
				return removed, err
			}
			if n == 0 {
				break
			}
		}
	}
	if err := s.removeOrphans(ctx, conn); err != nil {
		return removed, err
	}
	return removed, nil
}

// removeBatch removes the entries query selects (all, when excess is
// negative, else the first whose bytes add up to excess), through conn,
// and returns how many.
func (s *Store) removeBatch(ctx context.Context, conn *pgxpool.Conn, query string, excess int64, args ...any) (int, error) {
	var paths []string
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		paths = nil
		rows, err := tx.Query(ctx, query+" FOR UPDATE SKIP LOCKED", args...)
		if err != nil {
			return err
		}
		var ids []int64
		var freed int64
		for rows.Next() && (excess < 0 || freed < excess) {
			var id, n int64
			var p string
			if err := rows.Scan(&id, &p, &n); err != nil {
				rows.Close()
				return err
			}
			ids, paths, freed = append(ids, id), append(paths, p), freed+n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// The problems only these entries showed go with them.
		rows, err = tx.Query(ctx, "SELECT DISTINCT problem_id FROM sightings WHERE entry_id = ANY($1)", ids)
		if err != nil {
			return err
		}
		problems, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if _, err = tx.Exec(ctx, "DELETE FROM entries WHERE id = ANY($1)", ids); err != nil {
			return err
		}
		// Locked first, and checked in a statement of its own (which sees
		// every commit done by then): a commit that shows one of them
		// meanwhile holds its row, and it is skipped. A problem's captures
		// are its target's entries between its first and last sighting.
		rows, err = tx.Query(ctx, "SELECT id FROM problems WHERE id = ANY($1) ORDER BY id FOR UPDATE SKIP LOCKED", problems)
		if err != nil {
			return err
		}
		locked, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM problems p WHERE p.id = ANY($1) AND NOT EXISTS (SELECT 1 FROM entries e
			JOIN sightings s ON s.entry_id = e.id AND s.problem_id = p.id
			WHERE e.target_id = p.target_id AND e.time_ns BETWEEN p.first_ns AND p.last_ns)`, locked)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("retain: %w", err)
	}
	if err := s.dropRuns(ctx, conn, paths); err != nil {
		return len(paths), fmt.Errorf("retain: removed from the index, but: %w", err)
	}
	return len(paths), nil
}

// dropRuns deletes runs' objects and cached copies, then their names
// (through conn).
func (s *Store) dropRuns(ctx context.Context, conn *pgxpool.Conn, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	if err := s.objects.deleteRuns(ctx, paths); err != nil {
		return err
	}
	for _, p := range paths {
		s.cache.remove(filepath.Join(s.cache.dir, filepath.FromSlash(p)))
	}
	_, err := conn.Exec(ctx, "DELETE FROM names n WHERE n.path = ANY($1) AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.path = n.path)", paths)
	return err
}

// removeOrphans removes the names (and objects) that no entry has and
// that were taken more than orphanAge ago by the database's clock:
// commits interrupted between their upload and their index, and
// retention interrupted before its objects. Each batch's names are
// locked before their objects go and deleted with them in one
// transaction: a commit still indexing one (stalled past its deadline)
// waits on the lock, then fails for want of its name, rather than index
// a run whose objects are gone; and names whose objects could not be
// deleted stay for the next Retain.
func (s *Store) removeOrphans(ctx context.Context, conn *pgxpool.Conn) error {
	for {
		var n int
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT n.path FROM names n WHERE n.taken < now() - make_interval(secs => $1)
				AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.path = n.path)
				ORDER BY n.taken LIMIT `+fmt.Sprint(orphanBatch)+` FOR UPDATE SKIP LOCKED`, orphanAge.Seconds())
			if err != nil {
				return err
			}
			paths, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil || len(paths) == 0 {
				return err
			}
			n = len(paths)
			if err := s.objects.deleteRuns(ctx, paths); err != nil {
				return err
			}
			for _, p := range paths {
				s.cache.remove(filepath.Join(s.cache.dir, filepath.FromSlash(p)))
			}
			_, err = tx.Exec(ctx, "DELETE FROM names WHERE path = ANY($1)", paths)
			return err
		})
		if err != nil {
			return fmt.Errorf("retain: orphans: %w", oneLine{err})
		}
		if n < orphanBatch {
			return nil
		}
	}
}

// orphanBatch is how many orphans one transaction removes: it holds
// their names locked while their objects are deleted.
const orphanBatch = 100

// rewriteRecord writes an entry's entry.json object anew (and its cached
// copy's).
func (s *Store) rewriteRecord(ctx context.Context, e store.Entry) error {
	// Its own directory: processes sharing the cache may rewrite one
	// record at once.
	dir, err := os.MkdirTemp(filepath.Join(s.cache.dir, store.TempDir), fmt.Sprintf("record-%d-", e.ID))
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := store.WriteRecord(dir, e); err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(dir, store.EntryFile))
	if err != nil {
		return err
	}
	key := s.objects.key(e.Path, store.EntryFile)
	if _, err := s.objects.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.objects.o.Bucket), Key: aws.String(key),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))}); err != nil {
		return fmt.Errorf("rewrite %s: %w", key, err)
	}
	cached := filepath.Join(s.cache.dir, filepath.FromSlash(e.Path))
	if _, err := os.Stat(cached); err == nil {
		store.WriteRecord(cached, e)
	}
	return nil
}
