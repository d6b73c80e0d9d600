package run

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a run leaves goroutines behind: a run
// drives load, timed profiles and snapshots concurrently, and each must end
// with it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
