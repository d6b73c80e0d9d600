package browsertests

import (
	"os"
	"runtime"
	"testing"
)

// TestMain samples this process's heap finely, as demo does for the
// example it starts: the tests profile example services that run in this
// process, and at the default rate (one sample per 512 KiB) a short window
// of small allocations may leave no sample at their sites.
func TestMain(m *testing.M) {
	runtime.MemProfileRate = 4096
	os.Exit(m.Run())
}
