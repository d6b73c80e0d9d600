package store

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heapscope/heapscope/internal/result"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir) // never returns
	}
	goleak.VerifyTestMain(m)
}

// The fixtures: real run directories recorded by storetest/testdata/gen.sh,
// shared with the conformance suite.
const fixtureRoot = "storetest/testdata/runs"

const (
	fixtureLeaky   = "leaky"   // complete, local, in a limited cgroup, with findings
	fixturePartial = "partial" // partial: the target died mid-window
)

// openStore opens a store in a fresh directory, closed when the test ends.
func openStore(t testing.TB) *Embedded {
	t.Helper()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// writeFixture writes the fixture's run directory into dir (created when
// missing).
func writeFixture(t testing.TB, name, dir string) {
	t.Helper()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(fixtureRoot, name))); err != nil {
		t.Fatal(err)
	}
}

// fixtureDir returns a fresh copy of a fixture's run directory.
func fixtureDir(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	writeFixture(t, name, dir)
	return dir
}

// readFixture returns a fixture's result.
func readFixture(t testing.TB, name string) *result.Run {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureRoot, name, result.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var r result.Run
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// commit captures a fixture as kind for target, through Begin and Commit.
func commit(t testing.TB, s *Embedded, kind Kind, target, fixture string, e Entry) Entry {
	t.Helper()
	p, err := s.Begin(kind, target)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Abandon()
	writeFixture(t, fixture, p.Dir())
	out, err := p.Commit(p.Dir(), e)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// at is a fixed time, minutes after a fixed origin.
func at(minutes int) time.Time {
	return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(minutes) * time.Minute)
}

func TestOpen_Migrates(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var version int
	var mode string
	if err := s.reader.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if err := s.reader.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	files, err := schemaVersions()
	if err != nil {
		t.Fatal(err)
	}
	if version != len(files) || mode != "wal" {
		t.Errorf("index at schema version %d in %s mode, want %d in wal", version, mode, len(files))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A second open finds the schema in place and applies nothing again.
	s, err = Open(dir)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{IndexFile, RunsDir, BundlesDir, TempDir} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("after Open: %v", err)
		}
	}
}

func TestOpen_RefusesNewerIndex(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.writer.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := Open(dir); err == nil {
		s.Close()
		t.Fatal("Open of an index of schema version 99: no error")
	}
}

// TestMetrics_MatchSchema keeps the Go list of series and the index's
// metrics table the same.
func TestMetrics_MatchSchema(t *testing.T) {
	s := openStore(t)
	rows, err := s.reader.Query("SELECT id, name, unit FROM metrics ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []metric
	for rows.Next() {
		var m metric
		if err := rows.Scan(&m.id, &m.name, &m.unit); err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	if len(got) != len(metrics) {
		t.Fatalf("metrics table has %d rows, Go has %d metrics", len(got), len(metrics))
	}
	for i, m := range metrics {
		if got[i].id != m.id || got[i].name != m.name || got[i].unit != m.unit {
			t.Errorf("metric %d: table has %d %s %s, Go has %d %s %s", i, got[i].id, got[i].name, got[i].unit, m.id, m.name, m.unit)
		}
	}
}

// count returns the rows of a table.
func count(t testing.TB, db *sql.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
