package escape

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPatterns(t *testing.T) {
	const module = "github.com/heapscope/heapscope"
	tests := []struct {
		name  string
		root  string
		sites []Site
		want  []string
	}{
		{
			name: "packages of the module, once each, sorted",
			sites: []Site{
				{Package: module + "/examples/leakycache", File: "/src/heapscope/examples/leakycache/leakycache.go"},
				{Package: module + "/examples/naivekv", File: "/src/heapscope/examples/naivekv/handler.go"},
				{Package: module + "/examples/leakycache", File: "/src/heapscope/examples/leakycache/leakycache.go"},
			},
			want: []string{"./examples/leakycache", "./examples/naivekv"},
		},
		{
			name:  "the module's root package",
			sites: []Site{{Package: module, File: "/src/heapscope/heapscope.go"}},
			want:  []string{"."},
		},
		{
			name: "outside the module: standard library, dependencies, a module whose path extends this one's",
			sites: []Site{
				{Package: "net/http", File: "/usr/local/go/src/net/http/server.go"},
				{Package: "github.com/google/pprof/profile", File: "/go/pkg/mod/github.com/google/pprof/profile/encode.go"},
				{Package: module + "-extra/cache", File: "/src/x/cache.go"},
			},
			want: nil,
		},
		{
			name: "commands by their files: under the root, or a -trimpath module path",
			root: "/src/heapscope",
			sites: []Site{
				{Package: "main", File: "/src/heapscope/cmd/heapscope/main.go"},
				{Package: "main", File: module + "/examples/leakycache/cmd/leakycache/main.go"},
				{Package: "main", File: "/src/heapscope/main.go"},
			},
			want: []string{".", "./cmd/heapscope", "./examples/leakycache/cmd/leakycache"},
		},
		{
			name: "a command elsewhere, or with an unknown root, is left out",
			sites: []Site{
				{Package: "main", File: "/src/other/main.go"},
				{Package: "main", File: "/src/heapscope/cmd/heapscope/main.go"},
			},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Patterns(module, tt.root, tt.sites); !slices.Equal(got, tt.want) {
				t.Errorf("Patterns = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestModulePath(t *testing.T) {
	noModuleLine := t.TempDir()
	write(t, filepath.Join(noModuleLine, "go.mod"), "go 1.26\n")
	tests := []struct {
		name, dir, want, wantErr string
	}{
		{name: "this repository", dir: filepath.Join("..", ".."), want: "github.com/heapscope/heapscope"},
		{name: "no go.mod", dir: t.TempDir(), wantErr: "no such file"},
		{name: "no module line", dir: noModuleLine, wantErr: "go.mod has no module line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ModulePath(tt.dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ModulePath(%s) = %q, %v; want an error containing %q", tt.dir, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ModulePath(%s) = %q, %v; want %q", tt.dir, got, err, tt.want)
			}
		})
	}
}
