package trigger

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/heapscope/heapscope/internal/cgrouptest"
)

func TestMain(m *testing.M) {
	if cgrouptest.IsChild() {
		cgrouptest.RunChild()
		return
	}
	if os.Getenv(helperEnv) != "" {
		runHelper()
		return
	}
	goleak.VerifyTestMain(m)
}
