package pgtest

import (
	"testing"

	"github.com/heapscope/heapscope/internal/testserver"
)

// TestMain stops the shared cluster, then checks that no goroutine (a
// process waiter, a connection) is left behind.
func TestMain(m *testing.M) { testserver.Main(m, StopShared) }
