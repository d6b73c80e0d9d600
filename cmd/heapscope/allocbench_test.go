package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/allocbench"
)

func TestAllocbench_Local(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("allocbench reads /proc")
	}
	out := filepath.Join(t.TempDir(), "ab.html")
	got := heapscope(t, "allocbench", "--go", "local", "--pattern", "^large-noptr-slice-retained", "--count", "1", "--live", "16", "--format", "json", "-o", out)
	if got.code != exitOK {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	var rep allocbench.Report
	if err := json.Unmarshal([]byte(got.stdout), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v", err)
	}
	if len(rep.Patterns) != 2 || len(rep.Toolchains) != 1 || rep.Toolchains[0].GoVersion == "" {
		t.Fatalf("%d patterns under %+v, want 2 under the local toolchain", len(rep.Patterns), rep.Toolchains)
	}
	byName := map[string]allocbench.Cell{}
	for _, p := range rep.Patterns {
		byName[p.Name] = p.Cells[0]
	}
	sparse, full := byName["large-noptr-slice-retained-sparse"], byName["large-noptr-slice-retained-full"]
	if sparse.Runs != 1 || full.Runs != 1 {
		t.Fatalf("runs %d and %d, want 1 each", sparse.Runs, full.Runs)
	}
	if s, f := sparse.RSSPerHeapByte.Median, full.RSSPerHeapByte.Median; s >= f/2 {
		t.Errorf("RSS per heap byte: mostly untouched %.2f, fully written %.2f; want the first well below the second", s, f)
	}
	html, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "<svg") || !strings.Contains(string(html), "large-noptr-slice-retained-full") {
		t.Error("the HTML page lacks the chart or the patterns")
	}

	// The saved runs analyse again without running.
	saved := filepath.Join(t.TempDir(), "runs.json")
	os.WriteFile(saved, []byte(got.stdout), 0o644)
	again := heapscope(t, "allocbench", "--from", saved, "--format", "json")
	if again.code != exitOK || again.stdout != got.stdout {
		t.Errorf("--from gives exit %d and another report (stderr %q)", again.code, again.stderr)
	}
	md := heapscope(t, "allocbench", "--from", saved, "--format", "markdown")
	if md.code != exitOK || !strings.Contains(md.stdout, "| large-noptr-slice-retained-sparse |") {
		t.Errorf("--from --format markdown: exit %d\n%s", md.code, md.stdout)
	}
}

func TestAllocbench_BadInput(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"toolchain without go prefix", []string{"allocbench", "--go", "1.24.3"}, `toolchain "1.24.3"`},
		{"toolchain twice", []string{"allocbench", "--go", "local,local"}, "listed twice"},
		{"no runs", []string{"allocbench", "--count", "0"}, "--count 0"},
		{"no pattern matches", []string{"allocbench", "--pattern", "huge"}, "no pattern matches"},
		{"bad pattern", []string{"allocbench", "--pattern", "("}, "--pattern"},
		{"bad format", []string{"allocbench", "--format", "xml"}, "--format"},
		{"bad extension", []string{"allocbench", "-o", "chart.png"}, "use .svg or .html"},
		{"bad alpha", []string{"allocbench", "--alpha", "2"}, "--alpha"},
		{"arguments", []string{"allocbench", "go1.24.3"}, "unknown command"},
		{"from with a run flag", []string{"allocbench", "--from", "runs.json", "--go", "local"}, "--go is about running"},
		{"from a missing file", []string{"allocbench", "--from", "no-such-runs.json"}, "--from"},
		{"from something else", []string{"allocbench", "--from", "../../go.mod"}, "not an allocbench JSON report"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := heapscope(t, tt.args...)
			if got.code != exitUsage {
				t.Errorf("exit %d, want %d; stderr %q", got.code, exitUsage, got.stderr)
			}
			if !strings.Contains(got.stderr, tt.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", got.stderr, tt.wantErr)
			}
		})
	}
}
