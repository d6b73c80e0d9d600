package pgtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// connect opens a connection for the test, closed at its end.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// gone says whether no process has the PID any more.
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func TestStart_roundTripThenStopped(t *testing.T) {
	var s *Server
	t.Run("cluster", func(t *testing.T) {
		began := time.Now()
		s = Start(t)
		t.Logf("cluster started in %s (%s, pid %d)", time.Since(began).Round(time.Millisecond), s.BinDir, s.PID())
		if !strings.HasPrefix(s.URL, "postgres://postgres@127.0.0.1:") {
			t.Errorf("URL = %q, want postgres://postgres@127.0.0.1:PORT/…", s.URL)
		}
		conn := connect(t, s.NewDatabase(t))
		ctx := t.Context()
		if _, err := conn.Exec(ctx, "CREATE TABLE runs (id int PRIMARY KEY, target text NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO runs VALUES ($1, $2), ($3, $4)", 1, "api", 2, "worker"); err != nil {
			t.Fatal(err)
		}
		var targets []string
		rows, _ := conn.Query(ctx, "SELECT target FROM runs ORDER BY id")
		targets, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(targets, ",") != "api,worker" {
			t.Errorf("SELECT target = %q, want [api worker]", targets)
		}
		for setting, want := range map[string]string{
			"listen_addresses": "127.0.0.1",
			"fsync":            "off",
			"TimeZone":         "UTC",
		} {
			var got string
			if err := conn.QueryRow(ctx, "SELECT current_setting($1)", setting).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s = %q, want %q", setting, got, want)
			}
		}
	})
	if s == nil {
		return
	}
	if !gone(s.PID()) {
		t.Errorf("postmaster (pid %d) still running after the test's cleanup", s.PID())
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cluster directory %s still there after the test's cleanup: %v", s.Dir, err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Stop again: %v", err)
	}
}

func TestServer_NewDatabase(t *testing.T) {
	s := Shared(t)
	if again := Shared(t); again != s {
		t.Fatalf("Shared started a second cluster (%s, then %s)", s.URL, again.URL)
	}
	var names []string
	t.Run("two databases", func(t *testing.T) {
		a, b := s.NewDatabase(t), s.NewDatabase(t)
		if a == b {
			t.Fatalf("NewDatabase gave %s twice", a)
		}
		for _, url := range []string{a, b} {
			var name string
			if err := connect(t, url).QueryRow(t.Context(), "SELECT current_database()").Scan(&name); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
		}
		if _, err := connect(t, a).Exec(t.Context(), "CREATE TABLE only_in_a (x int)"); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := connect(t, b).QueryRow(t.Context(), "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("a table made in %s shows in %s", a, b)
		}
	})
	// The subtest's cleanups dropped its databases (its connections
	// closed first).
	conn := connect(t, s.URL)
	for _, name := range names {
		var n int
		if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("database %s still there after the test's cleanup", name)
		}
	}
}

func TestServer_refusesOtherHosts(t *testing.T) {
	s := Shared(t)
	// The cluster listens on 127.0.0.1 alone: another loopback address
	// finds no server.
	url := strings.Replace(s.URL, "127.0.0.1", "127.0.0.2", 1) + "&connect_timeout=2"
	if conn, err := pgx.Connect(t.Context(), url); err == nil {
		conn.Close(t.Context())
		t.Errorf("connected to %s, want only 127.0.0.1 served", url)
	}
}

func TestDatabaseName(t *testing.T) {
	for _, tc := range []struct {
		test string
		n    int64
		want string
	}{
		{"TestStore", 1, "t_teststore_1"},
		{"TestStore/Put_then_Get", 12, "t_teststore_put_then_get_12"},
		{"Test" + strings.Repeat("X", 80), 3, "t_test" + strings.Repeat("x", 63-len("t_test_3")) + "_3"},
	} {
		got := databaseName(tc.test, tc.n)
		if got != tc.want {
			t.Errorf("databaseName(%q, %d) = %q, want %q", tc.test, tc.n, got, tc.want)
		}
		if len(got) > 63 {
			t.Errorf("databaseName(%q, %d) is %d bytes, more than PostgreSQL's 63", tc.test, tc.n, len(got))
		}
	}
}

func TestFindBinDir(t *testing.T) {
	server := func(t *testing.T, dir string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"initdb", "postgres"} {
			if err := os.WriteFile(filepath.Join(dir, name), nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	noPath := func(string) (string, error) { return "", errors.New("not on PATH") }
	for _, tc := range []struct {
		name     string
		versions []string // server binaries under versions/V/bin
		clients  []string // client tools alone under versions/V/bin
		onPath   bool     // a server on PATH
		want     string   // versions/…, path/… or "" for an error
	}{
		{name: "highest version", versions: []string{"9.6", "10", "15"}, want: "versions/15/bin"},
		{name: "a client-only version is passed over", versions: []string{"15"}, clients: []string{"17"}, onPath: true, want: "versions/15/bin"},
		{name: "PATH when no version", onPath: true, want: "path"},
		{name: "PATH when only client tools", clients: []string{"16"}, onPath: true, want: "path"},
		{name: "none", clients: []string{"16"}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for _, v := range tc.versions {
				server(t, filepath.Join(root, "versions", v, "bin"))
			}
			for _, v := range tc.clients {
				if err := os.MkdirAll(filepath.Join(root, "versions", v, "bin"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			lookPath := noPath
			if tc.onPath {
				server(t, filepath.Join(root, "path"))
				lookPath = func(name string) (string, error) { return filepath.Join(root, "path", name), nil }
			}
			got, err := findBinDir(filepath.Join(root, "versions"), lookPath)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), "apt-get install postgresql") {
					t.Errorf("findBinDir = %q, %v; want an error naming apt-get install postgresql", got, err)
				}
				return
			}
			if want := filepath.Join(root, tc.want); got != want || err != nil {
				t.Errorf("findBinDir = %q, %v; want %q", got, err, want)
			}
		})
	}
}

// TestStartClusterWith_durable checks that a durable cluster keeps what a
// test cluster turns off.
func TestStartClusterWith_durable(t *testing.T) {
	s, err := StartClusterWith(Options{Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the connection's cleanup, registered below
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	conn := connect(t, s.URL)
	for _, setting := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
		var got string
		if err := conn.QueryRow(t.Context(), "SELECT current_setting($1)", setting).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != "on" {
			t.Errorf("%s = %q in a durable cluster, want on", setting, got)
		}
	}
}
