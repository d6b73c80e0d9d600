package layers

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxCommandLines bounds cmd/heapscope's non-test Go code, counted as wc
// -l counts it: the command holds flags, help, exit codes and wiring;
// parsing, checking, reading, assembling and rendering are its packages'.
const maxCommandLines = 2000

// TestCommandIsThin keeps cmd/heapscope within maxCommandLines.
func TestCommandIsThin(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "cmd", "heapscope", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("cmd/heapscope's Go files: %v, %v", files, err)
	}
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(data, []byte("\n"))
	}
	t.Logf("cmd/heapscope: %d lines of non-test Go code, at most %d", lines, maxCommandLines)
	if lines > maxCommandLines {
		t.Errorf("cmd/heapscope has %d lines of non-test Go code, more than %d: move what is not flags, help, exit codes or wiring into its package under internal/", lines, maxCommandLines)
	}
}
