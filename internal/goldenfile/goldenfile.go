// Package goldenfile compares what tests produce with files kept under
// testdata/, and rewrites those files when the tests run with -update:
//
//	go test ./internal/report -update
package goldenfile

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Update reports whether the tests run with -update, for tests that write
// golden files of their own making.
func Update() bool { return *update }

// Check compares got with the file at path. With -update it writes got
// there instead. On a mismatch it prints a unified diff from the file to
// got and leaves got beside the file as path.got (git ignores *.got).
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (create it with -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		if err := os.WriteFile(path+".got", got, 0o644); err != nil {
			t.Error(err)
		}
		t.Errorf("output differs from %s (rerun with -update if the change is right; got is in %s.got):\n%s",
			path, path, unifiedDiff(path, string(want), path+".got", string(got)))
	}
}
