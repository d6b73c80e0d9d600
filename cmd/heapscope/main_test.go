package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// asMainEnv makes the test binary behave as heapscope itself: demo
// re-executes its own executable to start an example service, and in tests
// that executable is this test binary.
const asMainEnv = "HEAPSCOPE_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		return
	}
	if mode := os.Getenv(gcChildEnv); mode != "" {
		os.Exit(gcChild(mode))
	}
	goleak.VerifyTestMain(m)
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
