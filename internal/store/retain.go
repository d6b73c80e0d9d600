package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Retention bounds what the store keeps. Zero fields bound nothing.
type Retention struct {
	// MaxAge removes the entries (and series findings) older than this.
	MaxAge time.Duration
	// MaxBytes removes the oldest entries until the rest fit.
	MaxBytes int64
	// Now is when ages are counted from; zero, the clock's time.
	Now time.Time
}

// now returns the time ages are counted from.
func (r Retention) now() time.Time {
	if r.Now.IsZero() {
		return time.Now()
	}
	return r.Now
}

// Retain removes the entries the retention no longer keeps, oldest first,
// and returns how many. Their index rows go first, in one transaction;
// then each directory is renamed under .tmp and removed from there. A
// crash leaves at worst a directory the index no longer knows (which
// Check reports, and its repair indexes again) or a remnant under .tmp
// (removed by the next Open), never an index row without its directory
// nor half a run in view.
func (s *Embedded) Retain(r Retention) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var paths []string
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		paths = nil // a retried transaction starts over
		remove := func(query string, excess int64, args ...any) error {
			ids, ps, err := victims(tx, query, excess, args...)
			if err != nil {
				return err
			}
			for _, id := range ids {
				if err := deleteEntry(tx, id); err != nil {
					return err
				}
			}
			paths = append(paths, ps...)
			return nil
		}
		if r.MaxAge > 0 {
			cutoff := unixNano(r.now().Add(-r.MaxAge))
			if err := remove("SELECT id, path, bytes FROM entries WHERE time_ns < ? ORDER BY time_ns, id", -1, cutoff); err != nil {
				return err
			}
			if _, err := tx.Exec("DELETE FROM findings WHERE entry_id IS NULL AND time_ns < ?", cutoff); err != nil {
				return err
			}
			if _, err := tx.Exec("DELETE FROM events WHERE time_ns < ?", cutoff); err != nil {
				return err
			}
		}
		if r.MaxBytes > 0 {
			var total sql.NullInt64
			if err := tx.QueryRow("SELECT SUM(bytes) FROM entries").Scan(&total); err != nil {
				return err
			}
			if excess := total.Int64 - r.MaxBytes; excess > 0 {
				return remove("SELECT id, path, bytes FROM entries ORDER BY time_ns, id", excess)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("retain: %w", err)
	}
	var errs []error
	for _, p := range paths {
		if err := s.removeDir(p); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return len(paths), fmt.Errorf("retain: removed from the index, but: %w", err)
	}
	return len(paths), nil
}

// victims runs query and returns the ids and paths of its rows, all of
// them when excess is negative, else the first ones whose bytes add up to
// excess.
func victims(tx *sql.Tx, query string, excess int64, args ...any) ([]int64, []string, error) {
	rows, err := tx.Query(query, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var ids []int64
	var paths []string
	var freed int64
	for rows.Next() && (excess < 0 || freed < excess) {
		var id, n int64
		var p string
		if err := rows.Scan(&id, &p, &n); err != nil {
			return nil, nil, err
		}
		ids, paths, freed = append(ids, id), append(paths, p), freed+n
	}
	return ids, paths, rows.Err()
}

// deleteEntry removes an entry's row with its labels, sightings (and the
// problems only it showed) and points.
func deleteEntry(tx *sql.Tx, id int64) error {
	var tid, end int64
	if err := tx.QueryRow("SELECT target_id, end_ns FROM entries WHERE id = ?", id).Scan(&tid, &end); err != nil {
		return err
	}
	ids := make([]string, len(metrics))
	for i, m := range metrics {
		ids[i] = fmt.Sprint(m.id)
	}
	// The points' key leads with (target, metric, time): name every
	// metric, so that each is one lookup rather than a scan of the target.
	if _, err := tx.Exec("DELETE FROM points WHERE target_id = ? AND metric_id IN ("+strings.Join(ids, ", ")+
		") AND time_ns = ? AND entry_id = ?", tid, end, id); err != nil {
		return err
	}
	if _, err := tx.Exec("DELETE FROM labels WHERE entry_id = ?", id); err != nil {
		return err
	}
	if _, err := tx.Exec("DELETE FROM findings WHERE entry_id = ?", id); err != nil {
		return err
	}
	if err := deleteSightings(tx, id); err != nil {
		return err
	}
	_, err := tx.Exec("DELETE FROM entries WHERE id = ?", id)
	return err
}

// deleteSightings removes an entry's sightings, and the problems no
// other capture still shows.
func deleteSightings(tx *sql.Tx, id int64) error {
	rows, err := tx.Query("SELECT DISTINCT problem_id FROM sightings WHERE entry_id = ?", id)
	if err != nil {
		return err
	}
	var problems []int64
	for rows.Next() {
		var p int64
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return err
		}
		problems = append(problems, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if _, err := tx.Exec("DELETE FROM sightings WHERE entry_id = ?", id); err != nil {
		return err
	}
	for _, p := range problems {
		if _, err := tx.Exec("DELETE FROM problems WHERE id = ? AND "+noSighting, p); err != nil {
			return err
		}
	}
	return nil
}

// noSighting is true of a problem (problems, unaliased) that no capture
// shows any more: its captures are its target's entries between its first
// and last sighting, walked through entries_by_target_time.
const noSighting = `NOT EXISTS (SELECT 1 FROM entries e CROSS JOIN sightings s
	WHERE e.target_id = problems.target_id AND e.time_ns BETWEEN problems.first_ns AND problems.last_ns
		AND s.entry_id = e.id AND s.problem_id = problems.id)`

// removeDir moves a run directory (relative to the data directory) under
// .tmp, then removes it: what a crash interrupts is never in view.
func (s *Embedded) removeDir(rel string) error {
	src := filepath.Join(s.dir, filepath.FromSlash(rel))
	var b [8]byte
	rand.Read(b[:])
	dst := filepath.Join(s.dir, TempDir, "removed-"+hex.EncodeToString(b[:]))
	if err := os.Rename(src, dst); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("remove %s: %w", rel, err)
	}
	if err := syncDir(filepath.Dir(src)); err != nil {
		return fmt.Errorf("remove %s: %w", rel, err)
	}
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("remove %s: %w", rel, err)
	}
	return nil
}
