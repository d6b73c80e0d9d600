package view

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a server or pprof's driver leaves
// goroutines behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
