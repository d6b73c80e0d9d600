package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite_KeepsOldFileOnFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graph.svg")
	os.WriteFile(path, []byte("old"), 0o644)
	err := Write(path, func(w io.Writer) error {
		io.WriteString(w, "half of a new graph")
		return errors.New("renderer failed")
	})
	if err == nil || !strings.Contains(err.Error(), "renderer failed") || !strings.HasPrefix(err.Error(), "write "+path) {
		t.Fatalf("error %v, want the renderer's, after the path", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "old" {
		t.Errorf("file holds %q after a failed write, want the old content", data)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("%d files in the directory, want only the old one", len(entries))
	}
	if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "new" {
		t.Errorf("file holds %q, want the new content", data)
	}
}

func TestWriteBytes(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		path    string
		wantErr string
	}{
		{name: "new file", path: filepath.Join(dir, "a.txt")},
		{name: "missing directory", path: filepath.Join(dir, "no", "such", "a.txt"), wantErr: "write " + filepath.Join(dir, "no", "such", "a.txt")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := WriteBytes(tt.path, []byte("data"))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o644 {
				t.Errorf("mode %v, want 0644", st.Mode())
			}
			if data, _ := os.ReadFile(tt.path); string(data) != "data" {
				t.Errorf("file holds %q", data)
			}
		})
	}
}
