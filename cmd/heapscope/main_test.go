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

func heapscopeIn(t *testing.T, stdin string, args ...string) invocation {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := execute(ctx, args, strings.NewReader(stdin), &stdout, &stderr)
	return invocation{code: code, stdout: stdout.String(), stderr: stderr.String()}
}
