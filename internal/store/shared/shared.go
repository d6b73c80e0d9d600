// Package shared is the store of a fleet: several watchers and servers
// over one PostgreSQL database (the index: entries, labels, findings,
// series, and the fleet's leases) and one S3-compatible bucket (the run
// directories, one object per file, under <prefix>/<entry path>/). It
// implements store.Store and passes the same conformance suite as the
// embedded store (internal/store/storetest).
//
// A commit takes the run's name in PostgreSQL first (names), uploads its
// files, then indexes the entry, its findings and its points in one
// transaction: readers only find a run through its entry, so a run is
// never seen half uploaded, and a crash leaves at worst a name with
// objects and no entry, which Retain removes once it is old. Retention
// goes the other way: rows first, in batches, then the objects, then the
// names.
//
// Readers get a run as a local directory (RunDir): its objects are
// downloaded once into a cache directory and served from there; the cache
// is bounded, least recently read first out, but spares the runs read in
// the last minutes.
//
// The schema is migrated by the embedded, numbered files in migrations/,
// under an advisory lock, so that watchers started together migrate once.
package shared

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heapscope/heapscope/internal/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options say where a shared store is.
type Options struct {
	// Postgres is the database's URL (postgres://user@host:port/db?…);
	// the password may come from PGPASSWORD or ~/.pgpass instead.
	Postgres string
	// Objects says where the run directories go.
	Objects Objects
	// CacheDir holds the runs read back, downloaded; a directory under
	// the user's cache directory when empty.
	CacheDir string
	// CacheBytes bounds the cache (DefaultCacheBytes when zero).
	CacheBytes int64
	// Existing opens a store whose schema a watcher has already made or
	// migrated, and never changes it: what readers (history, server)
	// open, so that they need no CREATE privilege and a wrong database
	// is an error rather than a new, empty store.
	Existing bool
}

// DefaultCacheBytes bounds a store's cache of downloaded runs.
const DefaultCacheBytes = 2 << 30

// migrationLock is the advisory lock key migrations hold.
const migrationLock = 0x68656170 // "heap"

// Store is a shared store: PostgreSQL and an S3-compatible bucket.
type Store struct {
	pool    *pgxpool.Pool
	objects *bucket
	cache   *cache
	name    string
	now     func() time.Time
	// commitTimeout bounds a commit (commitTimeout; tests shorten it).
	commitTimeout time.Duration
}

// Open connects to the database and the bucket, migrates the schema when
// it is older than this heapscope's, and checks the bucket answers.
func Open(ctx context.Context, o Options) (*Store, error) {
	name := describe(o)
	fail := func(err error) (*Store, error) {
		return nil, fmt.Errorf("open store %s: %w", name, oneLine{err})
	}
	if o.Postgres == "" {
		return fail(errors.New("no PostgreSQL URL"))
	}
	cfg, err := pgxpool.ParseConfig(o.Postgres)
	if err != nil {
		return fail(fmt.Errorf("the PostgreSQL URL: %w", err))
	}
	cfg.ConnConfig.ConnectTimeout = cmpDuration(cfg.ConnConfig.ConnectTimeout, 10*time.Second)
	// A statement that waits longer than this on a lock or a slow disk
	// fails rather than hold a capture.
	if _, ok := cfg.ConnConfig.RuntimeParams["statement_timeout"]; !ok {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = "60000"
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "heapscope"
	if !strings.Contains(o.Postgres, "pool_max_conns") {
		// pgx's default, four on a small machine, would queue a watcher's
		// concurrent commits behind each other.
		cfg.MaxConns = max(cfg.MaxConns, 16)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	s := &Store{pool: pool, name: name, now: time.Now, commitTimeout: commitTimeout}
	if err := s.migrate(ctx, o.Existing); err != nil {
		pool.Close()
		return fail(err)
	}
	if s.objects, err = openBucket(ctx, o.Objects); err != nil {
		pool.Close()
		return fail(err)
	}
	dir := o.CacheDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		// One directory per store: two fleets' runs share paths.
		sum := sha256.Sum256([]byte(name))
		dir = filepath.Join(base, "heapscope", "runs", hex.EncodeToString(sum[:8]))
	}
	if s.cache, err = openCache(dir, cmpInt(o.CacheBytes, DefaultCacheBytes)); err != nil {
		pool.Close()
		s.objects.close()
		return fail(err)
	}
	return s, nil
}

// OneLine says err on one line, wrapping it: pgx lists each address it
// tried on a line of its own, and a log line or a command's message must
// stay one line.
func OneLine(err error) error {
	if err == nil {
		return nil
	}
	return oneLine{err}
}

// oneLine is an error said on one line (OneLine).
type oneLine struct{ err error }

func (e oneLine) Error() string {
	var b strings.Builder
	prev := ""
	for _, line := range strings.Split(e.err.Error(), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || line == prev:
			continue
		case b.Len() == 0:
		case strings.HasSuffix(prev, ":"):
			b.WriteString(" ")
		default:
			b.WriteString("; ")
		}
		b.WriteString(line)
		prev = line
	}
	return b.String()
}

func (e oneLine) Unwrap() error { return e.err }

func cmpDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func cmpInt(n, def int64) int64 {
	if n > 0 {
		return n
	}
	return def
}

// describe names a store without its credentials.
func describe(o Options) string {
	db := "postgres"
	if u, err := url.Parse(o.Postgres); err == nil && u.Host != "" {
		db = u.Host + u.Path
	}
	return db + " + " + o.Objects.String()
}

// Pool is the store's database, for the fleet's leases (internal/fleet).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// String names the store: its database and bucket, without credentials.
func (s *Store) String() string { return s.name }

// RunRoot returns the cache directory runs are downloaded into, at their
// Path.
func (s *Store) RunRoot() string { return s.cache.dir }

// Close ends the downloads in flight and closes the database's
// connections.
func (s *Store) Close() error {
	s.cache.close()
	s.pool.Close()
	s.objects.close()
	return nil
}

// migrate applies the embedded migrations the database lacks, in order,
// each in its own transaction, under an advisory lock. A database at
// this heapscope's version is only read (no lock, no DDL), so that a
// role without CREATE can use a store its administrator migrated;
// existing refuses any other.
func (s *Store) migrate(ctx context.Context, existing bool) error {
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	slices.Sort(files)
	want := len(files)
	have, err := schemaVersion(ctx, s.pool)
	switch {
	case err != nil:
		return fmt.Errorf("read the schema's version: %w", err)
	case have > want:
		return fmt.Errorf("the database's schema is version %d, newer than this heapscope's %d: upgrade heapscope", have, want)
	case have == want:
		return nil
	case existing && have == 0:
		return errors.New("the database holds no heapscope store: a watch against it makes one (or check the URL)")
	case existing:
		return fmt.Errorf("the database's schema is version %d, older than this heapscope's %d: a watch of this version migrates it", have, want)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", migrationLock)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS heapscope_schema (
		version INTEGER PRIMARY KEY, applied TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	// Again under the lock: another watcher may have migrated meanwhile.
	if have, err = schemaVersion(ctx, conn); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if have > want {
		return fmt.Errorf("the database's schema is version %d, newer than this heapscope's %d: upgrade heapscope", have, want)
	}
	for _, f := range files {
		v, err := strconv.Atoi(strings.SplitN(filepath.Base(f), "_", 2)[0])
		if err != nil || v <= have {
			continue
		}
		sql, err := migrations.ReadFile(f)
		if err != nil {
			return err
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO heapscope_schema (version) VALUES ($1)", v)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate to %s: %w", filepath.Base(f), err)
		}
	}
	return nil
}

// schemaVersion returns the newest migration applied, 0 when none is.
func schemaVersion(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) (int, error) {
	// Two statements: one naming a table that does not exist fails
	// whichever branch it is in.
	var made bool
	if err := q.QueryRow(ctx, "SELECT to_regclass('heapscope_schema') IS NOT NULL").Scan(&made); err != nil || !made {
		return 0, err
	}
	var v int
	err := q.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM heapscope_schema").Scan(&v)
	return v, err
}

var _ store.Store = (*Store)(nil)

// Objects returns where the store keeps its runs.
func (s *Store) Objects() Objects { return s.objects.o }
