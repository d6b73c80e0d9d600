package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heapscope/heapscope/internal/testserver/pgtest"
	"github.com/heapscope/heapscope/internal/testserver/s3test"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(gcChildEnv); mode != "" {
		os.Exit(gcChild(mode))
	}
	// The bundled examples run from heapscope built as a user builds it:
	// under -race this test binary's own allocations (and so the live
	// heap the verdicts stand on) are not a service's.
	dir, err := os.MkdirTemp("", "heapscope-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin := filepath.Join(dir, "heapscope")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build heapscope for the examples: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	exampleExecutable = func() (string, error) { return bin, nil }
	goleak.VerifyTestMain(serversStopped{m}, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// serversStopped runs the tests, then stops the PostgreSQL and S3
// servers the fleet tests started, before goleak looks for leaks.
type serversStopped struct{ m *testing.M }

func (s serversStopped) Run() int {
	code := s.m.Run()
	for _, stop := range []func() error{pgtest.StopShared, s3test.StopShared} {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	return code
}

// result of one in-process heapscope invocation.
type invocation struct {
	code           int
	stdout, stderr string
}

// heapscope runs one command line in-process.
func heapscope(t *testing.T, args ...string) invocation {
	t.Helper()
	return heapscopeIn(t, "", args...)
}

// wantUsageError checks that an invocation failed as bad input must: exit
// status 2, one line on stderr that contains want, no panic, nothing on
// stdout.
func wantUsageError(t *testing.T, got invocation, want string) {
	t.Helper()
	if got.code != exitUsage {
		t.Errorf("exit code %d, want %d; stderr: %s", got.code, exitUsage, got.stderr)
	}
	msg := strings.TrimSuffix(got.stderr, "\n")
	if strings.Contains(msg, "\n") {
		t.Errorf("error is not one line:\n%s", got.stderr)
	}
	if !strings.Contains(msg, want) {
		t.Errorf("error %q does not contain %q", msg, want)
	}
	if strings.Contains(got.stderr, "panic") {
		t.Errorf("panicked: %s", got.stderr)
	}
	if got.stdout != "" {
		t.Errorf("stdout %q, want nothing", got.stdout)
	}
}

func heapscopeIn(t *testing.T, stdin string, args ...string) invocation {
	t.Helper()
	// Long enough for a run that keeps its window open (--until-confident
	// goes up to 5 × --duration); a bound for a hung one.
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := execute(ctx, args, strings.NewReader(stdin), &stdout, &stderr)
	return invocation{code: code, stdout: stdout.String(), stderr: stderr.String()}
}
