package compare

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestReadSide_Errors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	if _, _, err := ReadSide(nil); err == nil {
		t.Error("no directories: no error")
	}
	if _, _, err := ReadSide([]string{missing}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("a missing run: error %v", err)
	}
}
