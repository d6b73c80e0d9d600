package tunedkv

import (
	"testing"

	"github.com/heapscope/heapscope/examples/internal/kvtest"
)

// TestStore runs the store suite of package kvtest, which package naivekv
// runs too.
func TestStore(t *testing.T) {
	kvtest.TestStore(t, NewStore)
}
