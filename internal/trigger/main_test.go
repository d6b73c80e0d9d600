package trigger

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runHelper()
		return
	}
	goleak.VerifyTestMain(m)
}
