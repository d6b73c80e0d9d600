package naivekv

import (
	"testing"

	"github.com/heapscope/heapscope/examples/internal/kvtest"
)

// The handler's tests and benchmarks are the suite of package kvtest, which
// package tunedkv runs under the same names: the twins must answer alike, and
// their benchmark outputs compare directly.

func TestNewHandler(t *testing.T) { kvtest.TestHandler(t, NewStore, NewHandler) }

func BenchmarkHandler_Get(b *testing.B) { kvtest.BenchmarkGet(b, NewStore, NewHandler) }

func BenchmarkHandler_GetParallel(b *testing.B) { kvtest.BenchmarkGetParallel(b, NewStore, NewHandler) }
