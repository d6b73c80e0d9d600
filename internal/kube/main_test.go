package kube

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that Run leaves no informer goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
