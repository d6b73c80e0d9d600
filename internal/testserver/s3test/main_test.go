package s3test

import (
	"testing"

	"github.com/heapscope/heapscope/internal/testserver"
)

// TestMain stops the shared server, then checks that no goroutine (a
// process waiter, a client connection) is left behind.
func TestMain(m *testing.M) { testserver.Main(m, StopShared) }
