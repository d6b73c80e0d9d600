package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const local = "example.com/mod"

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		imports string
		want    []string // the quoted import each problem names, in order
	}{
		{name: "three kinds in order", imports: `
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"example.com/mod/internal/a"
`},
		{name: "standard library only", imports: `
	"fmt"
`},
		{name: "two groups of other modules", imports: `
	"fmt"

	"github.com/a/b"

	"github.com/c/d"

	"example.com/mod/x"
`},
		{name: "own package among the standard library", imports: `
	"fmt"
	"example.com/mod/x"
	"os"
`, want: []string{`"example.com/mod/x"`}},
		{name: "standard library after another group", imports: `
	"example.com/mod/x"

	"bytes"
	"testing"
`, want: []string{`"bytes"`}},
		{name: "own package among other modules", imports: `
	"fmt"

	"github.com/a/b"
	"example.com/mod/x"
`, want: []string{`"example.com/mod/x"`}},
		{name: "other modules after own", imports: `
	"example.com/mod/x"

	"github.com/a/b"
`, want: []string{`"github.com/a/b"`}},
		{name: "a prefix of the module path is not the module", imports: `
	"fmt"

	"example.com/modern"
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "package p\n\nimport (" + tt.imports + ")\n"
			got, err := check("p.go", []byte(src), local)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d naming %q", got, len(tt.want), tt.want)
			}
			for i, p := range got {
				if !strings.HasPrefix(p, "p.go:") || !strings.Contains(p, tt.want[i]) {
					t.Errorf("problem %q, want one at p.go naming %s", p, tt.want[i])
				}
			}
		})
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.go")
	bad := filepath.Join(dir, "bad.go")
	os.WriteFile(good, []byte("package p\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/mod/x\"\n)\n"), 0o644)
	os.WriteFile(bad, []byte("package p\n\nimport (\n\t\"example.com/mod/x\"\n\t\"fmt\"\n)\n"), 0o644)
	tests := []struct {
		name   string
		files  []string
		code   int
		stdout string
	}{
		{name: "clean", files: []string{good}, code: 0},
		{name: "misgrouped", files: []string{good, bad}, code: 1, stdout: bad + ":5: \"fmt\""},
		{name: "unreadable", files: []string{filepath.Join(dir, "missing.go")}, code: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(&stdout, &stderr, local, tt.files); code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			if !strings.HasPrefix(stdout.String(), tt.stdout) || tt.stdout == "" && stdout.Len() > 0 {
				t.Errorf("stdout %q, want it to start with %q", stdout.String(), tt.stdout)
			}
		})
	}
}
