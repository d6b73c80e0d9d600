// Package pgtest starts throwaway PostgreSQL clusters for tests, with
// Debian's postgresql package: initdb makes a cluster in a temporary
// directory, postgres serves it on 127.0.0.1 at a free port (trust
// authentication, from 127.0.0.1 and the cluster's own Unix socket
// directory only; fsync off unless Options.Durable), and the cluster is stopped by PID and its
// directory removed at the end. Run as root, initdb and postgres run as
// the postgres system user, since PostgreSQL refuses to run as root.
//
// One cluster per test binary serves many tests, each in a database of
// its own:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		if err := pgtest.StopShared(); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			code = 1
//		}
//		os.Exit(code)
//	}
//
//	func TestStore(t *testing.T) {
//		url := pgtest.Shared(t).NewDatabase(t) // an empty database, dropped at the end
//		…
//	}
//
// Start gives a test a cluster of its own instead, stopped at the end of
// the test. A missing PostgreSQL fails the test (scripts/test.sh installs
// it); it does not skip.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heapscope/heapscope/internal/testserver"
)

// Superuser is the cluster's superuser, who connects without a password.
const Superuser = "postgres"

// Server is a running PostgreSQL cluster.
type Server struct {
	// URL connects to the cluster's postgres database as Superuser:
	// postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable.
	URL string
	// Port is the TCP port the cluster listens on, on 127.0.0.1.
	Port int
	// Dir is the cluster's temporary directory: its data directory
	// (data/), its log and its Unix socket.
	Dir string
	// BinDir is the directory of the initdb and postgres that run it.
	BinDir string
	proc   *testserver.Process
	// databases counts NewDatabase's databases, for unique names.
	databases atomic.Int64
}

// Start starts a cluster for the test and stops it at the test's end. It
// fails the test if the cluster cannot start.
func Start(t testing.TB) *Server { return testserver.ForTest(t, StartCluster) }

var shared testserver.Shared[*Server]

// Shared returns the test binary's one cluster, started by its first
// call; StopShared, called from TestMain after m.Run, stops it. It fails
// the test if the cluster could not start (every later call fails alike,
// without trying again).
func Shared(t testing.TB) *Server { return shared.Get(t, StartCluster) }

// StopShared stops the cluster Shared started, if it did. Call it from
// TestMain once m.Run has returned.
func StopShared() error { return shared.Stop() }

// StartCluster starts a cluster, which the caller stops with Stop. Start
// and Shared are the forms for tests.
func StartCluster() (*Server, error) {
	return StartClusterWith(Options{})
}

// Options change how StartClusterWith runs a cluster.
type Options struct {
	// Durable keeps what a test cluster turns off for speed — fsync,
	// synchronous commits and full-page writes — so that every commit
	// waits for its WAL to reach the disk, as on a production server: for
	// benchmarks of what a commit costs.
	Durable bool
}

// StartClusterWith starts a cluster as StartCluster does, with options.
func StartClusterWith(o Options) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	owner, err := clusterOwner()
	if err != nil {
		return nil, err
	}
	dir, err := makeDir(owner)
	if err != nil {
		return nil, err
	}
	s, err := start(bin, dir, owner, o)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// start runs initdb in dir and then postgres, trying new ports while the
// one it picked turns out to be taken.
func start(bin, dir string, owner *syscall.Credential, o Options) (*Server, error) {
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", Superuser,
		"-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Env = serverEnv()
	initdb.Dir = dir // a working directory the postgres user can reach
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: owner}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("start postgresql: %s: %w\n%s", strings.Join(initdb.Args, " "), err, tail(out))
	}
	// Trust over the cluster's own socket and 127.0.0.1 alone, not
	// initdb's ::1 or replication lines.
	hba := "local all all trust\nhost all all 127.0.0.1/32 trust\n"
	if err := os.WriteFile(filepath.Join(data, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return nil, fmt.Errorf("start postgresql: %w", err)
	}
	socketDir := dir
	if len(socketDir) > 90 { // a socket path is at most 107 bytes
		socketDir = ""
	}
	for attempt := 0; ; attempt++ {
		port, err := testserver.FreePort()
		if err != nil {
			return nil, fmt.Errorf("start postgresql: %w", err)
		}
		args := []string{"-D", data,
			"-c", "listen_addresses=127.0.0.1",
			"-c", "port=" + strconv.Itoa(port),
			"-c", "unix_socket_directories=" + socketDir,
			"-c", "max_connections=200",
			"-c", "TimeZone=UTC"}
		if !o.Durable {
			args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
		}
		cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
		cmd.Env = serverEnv()
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: owner}
		proc, err := testserver.Run("postgresql", cmd, filepath.Join(dir, "postgres.log"))
		if err != nil {
			return nil, err
		}
		s := &Server{
			URL:    fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", Superuser, port),
			Port:   port,
			Dir:    dir,
			BinDir: bin,
			proc:   proc,
		}
		err = proc.Wait(context.Background(), s.ping)
		if err == nil {
			return s, nil
		}
		_ = proc.Stop(syscall.SIGINT)
		if attempt < 3 && proc.AddrInUse() {
			continue
		}
		return nil, err
	}
}

// ping connects and disconnects.
func (s *Server) ping(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// PID is the process id of the cluster's postmaster.
func (s *Server) PID() int { return s.proc.PID() }

// Stop shuts the cluster down by its PID (a fast shutdown, SIGINT; killed
// if still running after testserver.StopGrace) and removes its directory.
// Stopping it again does nothing more.
func (s *Server) Stop() error {
	err := s.proc.Stop(syscall.SIGINT)
	if rerr := os.RemoveAll(s.Dir); rerr != nil && err == nil {
		err = fmt.Errorf("stop postgresql: %w", rerr)
	}
	return err
}

// DatabaseURL returns the URL of the cluster's database name, as Superuser.
func (s *Server) DatabaseURL(name string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", Superuser, s.Port, name)
}

// NewDatabase creates an empty database for the test, named after it, and
// returns its URL; the database is dropped at the test's end (its
// connections closed first: close the test's own pools in cleanups
// registered after this call, which run before it).
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := databaseName(t.Name(), s.databases.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return s.DatabaseURL(name)
}

// exec runs one statement in the postgres database.
func (s *Server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", s.URL, err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// databaseName makes a database name from a test's name and a number:
// lower-case letters, digits and underscores, within PostgreSQL's 63
// bytes.
func databaseName(test string, n int64) string {
	var b strings.Builder
	for _, r := range strings.ToLower(test) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	base := b.String()
	suffix := "_" + strconv.FormatInt(n, 10)
	if room := 63 - len("t_") - len(suffix); len(base) > room {
		base = base[:room]
	}
	return "t_" + base + suffix
}

// versionsDir is where Debian installs each PostgreSQL major version,
// under N/bin.
const versionsDir = "/usr/lib/postgresql"

// BinDir finds the directory of the PostgreSQL server binaries (initdb
// and postgres): the highest version under /usr/lib/postgresql, where
// Debian puts them off PATH, then the PATH. (pg_config --bindir says
// where libpq-dev's client tools are, not the server's.)
func BinDir() (string, error) {
	return findBinDir(versionsDir, exec.LookPath)
}

// findBinDir is BinDir over a versions directory and a PATH lookup.
func findBinDir(versions string, lookPath func(string) (string, error)) (string, error) {
	entries, _ := os.ReadDir(versions)
	best, bestVersion := "", -1.0
	for _, e := range entries {
		v, err := strconv.ParseFloat(e.Name(), 64) // 9.6, 15, 17
		dir := filepath.Join(versions, e.Name(), "bin")
		if err != nil || v <= bestVersion || !isServerDir(dir) {
			continue
		}
		best, bestVersion = dir, v
	}
	if best != "" {
		return best, nil
	}
	if p, err := lookPath("initdb"); err == nil {
		if p, err := filepath.EvalSymlinks(p); err == nil && isServerDir(filepath.Dir(p)) {
			return filepath.Dir(p), nil
		}
	}
	return "", errors.New("no PostgreSQL server (initdb and postgres) in " + versions + "/*/bin or on PATH: install Debian's postgresql package (apt-get install postgresql; scripts/test.sh does)")
}

// isServerDir says whether dir holds both initdb and postgres.
func isServerDir(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// clusterOwner returns the credentials initdb and postgres run with: nil
// (the test's own) unless the test runs as root, then the postgres system
// user's, which Debian's postgresql package creates.
func clusterOwner() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("start postgresql: PostgreSQL does not run as root and there is no postgres user to run it as (Debian's postgresql package creates it): %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("start postgresql: postgres user's uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("start postgresql: postgres user's gid %q: %w", u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// makeDir makes the cluster's directory under the system's temporary
// directory (not a test's TempDir, which the postgres user may not be
// able to reach, and which a shared cluster would outlive), owned by
// owner when the cluster runs as another user.
func makeDir(owner *syscall.Credential) (string, error) {
	dir, err := os.MkdirTemp("", "heapscope-pgtest-")
	if err != nil {
		return "", fmt.Errorf("start postgresql: %w", err)
	}
	if owner == nil {
		return dir, nil
	}
	if err := os.Chown(dir, int(owner.Uid), int(owner.Gid)); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("start postgresql: %w", err)
	}
	if err := reachable(filepath.Dir(dir)); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("start postgresql: the postgres user cannot reach the temporary directory (set TMPDIR to one it can): %w", err)
	}
	return dir, nil
}

// reachable checks that every directory from / to dir lets other users
// through (the x bit for others, or the sticky /tmp's 1777).
func reachable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s is %v", d, fi.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// serverEnv is initdb's and postgres's environment: the PATH and the C
// locale, none of the caller's PG* variables.
func serverEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
}

// tail returns the last lines of a command's output.
func tail(out []byte) string {
	s := strings.TrimSpace(string(out))
	if len(s) > 2048 {
		s = s[len(s)-2048:]
	}
	return s
}
