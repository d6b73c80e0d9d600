package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go

	"github.com/heapscope/heapscope/internal/result"
)

// The names inside the data directory.
const (
	// IndexFile is the SQLite index (with its -wal and -shm beside it).
	IndexFile = "index.db"
	// RunsDir holds the scheduled runs, RunsDir/<target>/<time>[-N]/.
	RunsDir = "runs"
	// BundlesDir holds the trigger bundles,
	// BundlesDir/<target>/<time>-<trigger>[-N]/.
	BundlesDir = "bundles"
	// TempDir holds the captures in progress; nothing in it is listed.
	TempDir = ".tmp"
	// EntryFile is the store's record of an entry inside its run
	// directory, written before the directory is renamed into place, so
	// that an entry can be indexed again from its directory alone.
	EntryFile = "entry.json"
)

// busyTimeout is how long a statement waits for another connection's
// (or process's) write to finish before it fails.
const busyTimeout = 10 * time.Second

//go:embed schema/*.sql
var schemaFiles embed.FS

// Embedded is the embedded store of one data directory: run directories
// under runs/ and bundles/, indexed in index.db. Its methods are safe for
// concurrent use, and several processes may open the same directory (one
// watch, and history or check beside it).
type Embedded struct {
	dir string
	// writer is the one connection that writes; reader serves queries,
	// which WAL lets run beside a write.
	writer, reader *sql.DB
	// seriesStmt is Series' query, prepared once.
	seriesStmt *sql.Stmt
	// tmpLock is DIR/.tmp, opened and flock'ed: shared while the store
	// is open, exclusive while stale temporary entries are removed.
	tmpLock *os.File

	// mu orders the steps that must not interleave within this process:
	// a commit's rename and indexing, retention, check.
	mu sync.Mutex
	// pending counts this process's captures in progress under .tmp.
	pending int
	// missingDirs lists the store's directories that were missing when it
	// was opened without making them (OpenToCheck).
	missingDirs []string
	// staleSchema is the index's schema version and this heapscope's, when
	// the index was opened older without migrating it (OpenToCheck).
	staleSchema [2]int

	now func() time.Time
}

// Open opens the store in dir, creating dir and the index when missing
// and migrating an older index. When no other process has the store open,
// it removes what captures killed mid-way left under dir/.tmp.
func Open(dir string) (*Embedded, error) {
	return open(dir, openMode{create: true, clean: true, migrate: true})
}

// openMode says what opening a store may change.
type openMode struct {
	// create makes the data directory and its subdirectories when missing.
	create bool
	// clean empties .tmp when no other process has the store open.
	clean bool
	// migrate brings an older index up to this heapscope's schema. Without
	// it, an older index is opened as it is and staleSchema says so.
	migrate bool
}

// open opens the store in dir, changing what mode allows.
func open(dir string, mode openMode) (*Embedded, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	s := &Embedded{dir: abs, now: time.Now}
	for _, d := range []string{abs, filepath.Join(abs, TempDir), filepath.Join(abs, RunsDir), filepath.Join(abs, BundlesDir)} {
		if !mode.create {
			if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
				s.missingDirs = append(s.missingDirs, d)
			}
			continue
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("open store %s: %w", dir, err)
		}
	}
	// Without .tmp no watch has the store open (each makes it at start):
	// there is nothing to lock.
	if !slices.Contains(s.missingDirs, filepath.Join(abs, TempDir)) {
		if s.tmpLock, err = os.Open(filepath.Join(abs, TempDir)); err != nil {
			return nil, fmt.Errorf("open store %s: %w", dir, err)
		}
		if err := s.lockAndClean(mode.clean); err != nil {
			s.tmpLock.Close()
			return nil, fmt.Errorf("open store %s: %w", dir, err)
		}
	}
	if err := s.openIndex(mode.migrate); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	return s, nil
}

// OpenExisting opens a store that watch has written, for reading it:
// unlike Open it creates no store, a directory without an index is an
// error that says so, and it leaves .tmp as it is (what a dead process
// left there is for Check to report, and its repair to remove).
func OpenExisting(dir string) (*Embedded, error) {
	if err := isStore(dir); err != nil {
		return nil, err
	}
	return open(dir, openMode{create: true, migrate: true})
}

// OpenToCheck opens a store for Check. With repair it is OpenExisting;
// without, opening changes nothing at all: no directory is made, .tmp is
// left as it is and an older index is not migrated (Check reports what
// is missing and how old the index is).
func OpenToCheck(dir string, repair bool) (*Embedded, error) {
	if err := isStore(dir); err != nil {
		return nil, err
	}
	return open(dir, openMode{create: repair, migrate: repair})
}

// isStore says why dir is no store watch has written, or nil when it is.
func isStore(dir string) error {
	if dir == "" {
		return errors.New("no store directory: give the --data DIR of a watch")
	}
	if _, err := os.Stat(filepath.Join(dir, IndexFile)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s is not a heapscope store (no %s): give the --data of a watch", dir, IndexFile)
		}
		return fmt.Errorf("open store %s: %w", dir, err)
	}
	return nil
}

// lockAndClean takes the shared lock on .tmp, emptying it first (with
// clean) when the lock can be had exclusively: then no other process has
// the store open, and whatever .tmp holds was left by one that died.
func (s *Embedded) lockAndClean(clean bool) error {
	if !clean {
		return flock(s.tmpLock, syscall.LOCK_SH)
	}
	if exclusive, err := s.tryExclusive(); err != nil {
		return err
	} else if exclusive {
		if _, err := s.removeTemporary(nil); err != nil {
			return err
		}
	}
	return flock(s.tmpLock, syscall.LOCK_SH)
}

// tryExclusive trades the lock on .tmp for an exclusive one if no other
// process holds it, and says whether it did. flock converts by releasing
// first, so the caller must have nothing under .tmp of its own at stake.
func (s *Embedded) tryExclusive() (bool, error) {
	if s.tmpLock == nil {
		return true, nil
	}
	err := flock(s.tmpLock, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// removeTemporary removes every entry of .tmp but those named in keep, and
// returns their paths relative to the data directory.
func (s *Embedded) removeTemporary(keep []string) ([]string, error) {
	tmp := filepath.Join(s.dir, TempDir)
	des, err := os.ReadDir(tmp)
	if err != nil {
		return nil, fmt.Errorf("clean %s: %w", TempDir, err)
	}
	var removed []string
	for _, de := range des {
		if slices.Contains(keep, de.Name()) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(tmp, de.Name())); err != nil {
			return removed, fmt.Errorf("clean %s: %w", TempDir, err)
		}
		removed = append(removed, path.Join(TempDir, de.Name()))
	}
	return removed, nil
}

// flock locks f as how says; a store opened without .tmp has no file to
// lock, and nothing to lock it against.
func flock(f *os.File, how int) error {
	if f == nil {
		return nil
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			if err != nil {
				return fmt.Errorf("lock %s: %w", f.Name(), err)
			}
			return nil
		}
	}
}

// dsn is the data source name of the index: WAL, so that readers never
// wait for the writer; synchronous=FULL, so that an acknowledged commit
// survives a power cut as the fsync'ed directory it indexes does;
// immediate transactions, so that writers queue on the busy timeout
// instead of failing on a lock upgrade.
func (s *Embedded) dsn(readOnly bool) string {
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(busyTimeout.Milliseconds(), 10))
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "FULL")
	q.Set("_foreign_keys", "1")
	q.Set("_txlock", "immediate")
	if readOnly {
		q.Set("_query_only", "1")
	}
	u := url.URL{Path: filepath.ToSlash(filepath.Join(s.dir, IndexFile))}
	return "file:" + u.EscapedPath() + "?" + q.Encode()
}

func (s *Embedded) openIndex(migrate bool) error {
	var err error
	if s.writer, err = sql.Open("sqlite", s.dsn(false)); err != nil {
		return err
	}
	s.writer.SetMaxOpenConns(1)
	if migrate {
		if err := s.migrate(); err != nil {
			return err
		}
	} else if err := s.readSchemaVersion(); err != nil {
		return err
	}
	if s.reader, err = sql.Open("sqlite", s.dsn(true)); err != nil {
		return err
	}
	s.reader.SetMaxOpenConns(4)
	s.seriesStmt, err = s.reader.Prepare(`SELECT p.time_ns, p.value FROM points p
		WHERE p.target_id = (SELECT id FROM targets WHERE key = ?) AND p.metric_id = ?
		AND p.time_ns BETWEEN ? AND ? ORDER BY p.time_ns`)
	if err != nil {
		return fmt.Errorf("prepare series query: %w", err)
	}
	return nil
}

// migrate applies the schema files newer than the index's user_version,
// each in its own transaction that also sets user_version to its number.
func (s *Embedded) migrate() error {
	files, err := schemaVersions()
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := s.apply(f); err != nil {
			return err
		}
	}
	var v int
	if err := s.writer.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if latest := files[len(files)-1].version; v > latest {
		return fmt.Errorf("the index has schema version %d, newer than the %d this heapscope knows: upgrade heapscope", v, latest)
	}
	return nil
}

// readSchemaVersion notes in staleSchema the index's schema version when
// it is older than this heapscope's.
func (s *Embedded) readSchemaVersion() error {
	files, err := schemaVersions()
	if err != nil {
		return err
	}
	var v int
	if err := s.writer.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if latest := files[len(files)-1].version; v > latest {
		return fmt.Errorf("the index has schema version %d, newer than the %d this heapscope knows: upgrade heapscope", v, latest)
	} else if v < latest {
		s.staleSchema = [2]int{v, latest}
	}
	return nil
}

type schemaFile struct {
	version int
	name    string
}

// schemaVersions lists the embedded schema files, NNN_name.sql, in order.
func schemaVersions() ([]schemaFile, error) {
	names, err := fs.Glob(schemaFiles, "schema/*.sql")
	if err != nil {
		return nil, err
	}
	var out []schemaFile
	for _, n := range names {
		num, _, _ := strings.Cut(path.Base(n), "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("schema file %s: no version number", n)
		}
		out = append(out, schemaFile{version: v, name: n})
	}
	slices.SortFunc(out, func(a, b schemaFile) int { return a.version - b.version })
	for i, f := range out {
		if f.version != i+1 {
			return nil, fmt.Errorf("schema file %s: version %d, want %d", f.name, f.version, i+1)
		}
	}
	return out, nil
}

func (s *Embedded) apply(f schemaFile) error {
	body, err := schemaFiles.ReadFile(f.name)
	if err != nil {
		return err
	}
	tx, err := s.writer.Begin()
	if err != nil {
		return fmt.Errorf("migrate index: %w", err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("migrate index: %w", err)
	}
	if v >= f.version {
		return nil
	}
	if _, err := tx.Exec(string(body)); err != nil {
		return fmt.Errorf("migrate index to version %d (%s): %w", f.version, f.name, err)
	}
	if _, err := tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", f.version)); err != nil {
		return fmt.Errorf("migrate index to version %d: %w", f.version, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate index to version %d: %w", f.version, err)
	}
	return nil
}

// Close closes the index and releases the store's lock. Captures not yet
// committed are left to the next Open to remove.
func (s *Embedded) Close() error {
	var errs []error
	if s.seriesStmt != nil {
		errs = append(errs, s.seriesStmt.Close())
	}
	if s.reader != nil {
		errs = append(errs, s.reader.Close())
	}
	if s.writer != nil {
		errs = append(errs, s.writer.Close())
	}
	if s.tmpLock != nil {
		errs = append(errs, s.tmpLock.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close store %s: %w", s.dir, err)
	}
	return nil
}

// Dir returns the store's data directory, absolute.
func (s *Embedded) Dir() string { return s.dir }

// RunRoot returns the data directory: runs are in it at their Path.
func (s *Embedded) RunRoot() string { return s.dir }

// String names the store: its data directory.
func (s *Embedded) String() string { return s.dir }

// RunDir returns the entry's run directory inside the data directory.
func (s *Embedded) RunDir(_ context.Context, e Entry) (string, error) {
	if !fs.ValidPath(e.Path) || e.Path == "." {
		return "", fmt.Errorf("run of %s: %q is not a stored run's path", e.Target, e.Path)
	}
	dir := filepath.Join(s.dir, filepath.FromSlash(e.Path))
	if _, err := os.Stat(filepath.Join(dir, EntryFile)); err != nil {
		return "", fmt.Errorf("run of %s at %s: %w", e.Target, e.Path, err)
	}
	return dir, nil
}

// Size returns the bytes of the stored run directories, as indexed (the
// size of their files, summed at ingest).
func (s *Embedded) Size() (int64, error) {
	var n sql.NullInt64
	if err := s.reader.QueryRow("SELECT SUM(bytes) FROM entries").Scan(&n); err != nil {
		return 0, fmt.Errorf("store size: %w", err)
	}
	return n.Int64, nil
}

// Targets returns the keys of the targets with at least one stored entry,
// sorted.
func (s *Embedded) Targets() ([]string, error) {
	rows, err := s.reader.Query(`SELECT key FROM targets t
		WHERE EXISTS (SELECT 1 FROM entries e WHERE e.target_id = t.id) ORDER BY key`)
	if err != nil {
		return nil, fmt.Errorf("list targets: %w", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("list targets: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list targets: %w", err)
	}
	return out, nil
}

// withTx runs fn in a write transaction, committed when fn returns nil.
func (s *Embedded) withTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// unixNano and fromNano store times as integers, nanoseconds UTC.
func unixNano(t time.Time) int64 { return t.UnixNano() }

func fromNano(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// statusStored says whether a result of that status is stored: a failed
// run holds nothing to keep.
func statusStored(st result.Status) bool {
	return st == result.StatusComplete || st == result.StatusPartial
}
