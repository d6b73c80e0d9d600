// Package s3test starts real S3 servers for tests: versitygw, the Versity
// S3 gateway, with its posix backend over a temporary directory, on
// 127.0.0.1 at a free port (its admin API on another free 127.0.0.1
// port), root credentials made up for each server, stopped by PID and its
// directory removed at the end.
//
// The versitygw binary is found as $VERSITYGW, on PATH, or in GOBIN or
// GOPATH/bin, where scripts/test.sh installs it (go install
// github.com/versity/versitygw/cmd/versitygw@v1.8.0). A missing binary
// fails the test, naming that command; it does not skip.
//
// One server per test binary serves many tests, each in a bucket of its
// own:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		if err := s3test.StopShared(); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			code = 1
//		}
//		os.Exit(code)
//	}
//
//	func TestStore(t *testing.T) {
//		s := s3test.Shared(t)
//		bucket := s.NewBucket(t) // an empty bucket
//		client := s.Client()     // path-style, s.Endpoint, s.Region, the root keys
//		…
//	}
//
// Start gives a test a server of its own instead, stopped at the end of
// the test.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/heapscope/heapscope/internal/testserver"
)

// Version is the versitygw release the tests are run against, the one
// scripts/test.sh installs.
const Version = "v1.8.0"

// Install is the command that installs versitygw where the tests find it.
const Install = "go install github.com/versity/versitygw/cmd/versitygw@" + Version

// Region is the servers' region.
const Region = "us-east-1"

// Server is a running S3 server.
type Server struct {
	// Endpoint is the S3 API's base URL: http://127.0.0.1:PORT. Buckets
	// are addressed by path (http://127.0.0.1:PORT/BUCKET/KEY).
	Endpoint string
	// AdminEndpoint is the base URL of versitygw's admin API, on a port
	// of its own.
	AdminEndpoint string
	// Region is the region requests are signed for.
	Region string
	// AccessKey and SecretKey are the server's root credentials.
	AccessKey, SecretKey string
	// Dir is the server's temporary directory: the posix backend's root
	// (data/, a directory per bucket) and its log.
	Dir string
	// Binary is the versitygw that runs it.
	Binary string
	proc   *testserver.Process
	// transport carries the clients' requests, its idle connections
	// closed by Stop.
	transport *http.Transport
	// buckets counts NewBucket's buckets, for unique names.
	buckets atomic.Int64
}

// Start starts a server for the test and stops it at the test's end. It
// fails the test if the server cannot start.
func Start(t testing.TB) *Server { return testserver.ForTest(t, StartServer) }

var shared testserver.Shared[*Server]

// Shared returns the test binary's one server, started by its first
// call; StopShared, called from TestMain after m.Run, stops it. It fails
// the test if the server could not start (every later call fails alike,
// without trying again).
func Shared(t testing.TB) *Server { return shared.Get(t, StartServer) }

// StopShared stops the server Shared started, if it did. Call it from
// TestMain once m.Run has returned.
func StopShared() error { return shared.Stop() }

// StartServer starts a server, which the caller stops with Stop. Start
// and Shared are the forms for tests.
func StartServer() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "heapscope-s3test-")
	if err != nil {
		return nil, fmt.Errorf("start versitygw: %w", err)
	}
	s, err := start(bin, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// start runs versitygw over dir/data, trying new ports while the ones it
// picked turn out to be taken.
func start(bin, dir string) (*Server, error) {
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return nil, fmt.Errorf("start versitygw: %w", err)
	}
	access, secret := "hs"+randomHex(9), randomHex(20)
	for attempt := 0; ; attempt++ {
		port, err := testserver.FreePort()
		if err != nil {
			return nil, fmt.Errorf("start versitygw: %w", err)
		}
		admin, err := testserver.FreePort()
		if err != nil {
			return nil, fmt.Errorf("start versitygw: %w", err)
		}
		if admin == port {
			continue
		}
		addr, adminAddr := "127.0.0.1:"+strconv.Itoa(port), "127.0.0.1:"+strconv.Itoa(admin)
		cmd := exec.Command(bin,
			"--port", addr,
			"--admin-port", adminAddr,
			"--access", access,
			"--secret", secret,
			"--region", Region,
			"--quiet",
			"posix", data)
		cmd.Dir = dir
		// The caller's VGW_* and ROOT_* variables would set flags.
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
		proc, err := testserver.Run("versitygw", cmd, filepath.Join(dir, "versitygw.log"))
		if err != nil {
			return nil, err
		}
		transport := http.DefaultTransport.(*http.Transport).Clone()
		s := &Server{
			Endpoint:      "http://" + addr,
			AdminEndpoint: "http://" + adminAddr,
			Region:        Region,
			AccessKey:     access,
			SecretKey:     secret,
			Dir:           dir,
			Binary:        bin,
			proc:          proc,
			transport:     transport,
		}
		err = proc.Wait(context.Background(), func(ctx context.Context) error {
			_, err := s.Client().ListBuckets(ctx, &s3.ListBucketsInput{})
			return err
		})
		if err == nil {
			return s, nil
		}
		transport.CloseIdleConnections()
		_ = proc.Stop(syscall.SIGTERM)
		if attempt < 3 && proc.AddrInUse() {
			continue
		}
		return nil, err
	}
}

// PID is the server's process id.
func (s *Server) PID() int { return s.proc.PID() }

// Stop shuts the server down by its PID (SIGTERM; killed if still running
// after testserver.StopGrace) and removes its directory. Stopping it again
// does nothing more.
func (s *Server) Stop() error {
	s.transport.CloseIdleConnections()
	err := s.proc.Stop(syscall.SIGTERM)
	if rerr := os.RemoveAll(s.Dir); rerr != nil && err == nil {
		err = fmt.Errorf("stop versitygw: %w", rerr)
	}
	return err
}

// Client returns an S3 client of the server: its endpoint, path-style
// addressing, its region and root credentials, no retries (a test sees
// the server's first answer).
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(s.Endpoint),
		Region:       s.Region,
		UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey, Source: "s3test"}, nil
		}),
		HTTPClient:       &http.Client{Transport: s.transport},
		RetryMaxAttempts: 1,
	})
}

// NewBucket creates an empty bucket for the test, named after it, and
// returns its name. The bucket stays until the server stops.
func (s *Server) NewBucket(t testing.TB) string {
	t.Helper()
	name := bucketName(t.Name(), s.buckets.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// bucketName makes a bucket name from a test's name and a number:
// lower-case letters, digits and hyphens, within S3's 63 bytes.
func bucketName(test string, n int64) string {
	var b strings.Builder
	for _, r := range strings.ToLower(test) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	suffix := "-" + strconv.FormatInt(n, 10)
	base := b.String()
	if room := 63 - len("t-") - len(suffix); len(base) > room {
		base = base[:room]
	}
	return "t-" + base + suffix
}

// Binary finds versitygw: $VERSITYGW, then PATH, then GOBIN and
// GOPATH/bin as the go command reports them. Its error names Install.
func Binary() (string, error) {
	if p := os.Getenv("VERSITYGW"); p != "" {
		if !isExecutable(p) {
			return "", fmt.Errorf("VERSITYGW=%s is not an executable file: unset it, or install versitygw: %s", p, Install)
		}
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	var dirs []string
	if out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n") // GOBIN's line may be empty
		if len(lines) > 0 && lines[0] != "" {
			dirs = append(dirs, lines[0])
		}
		if len(lines) > 1 {
			for _, p := range filepath.SplitList(lines[1]) {
				dirs = append(dirs, filepath.Join(p, "bin"))
			}
		}
	}
	for _, d := range dirs {
		if p := filepath.Join(d, "versitygw"); isExecutable(p) {
			return p, nil
		}
	}
	return "", errors.New("no versitygw ($VERSITYGW, PATH, GOBIN, GOPATH/bin): install it with: " + Install + " (scripts/test.sh does)")
}

// isExecutable says whether p is an executable file.
func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
