package cgrouptest

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if IsChild() {
		RunChild()
	}
	os.Exit(m.Run())
}
