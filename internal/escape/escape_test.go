package escape

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/goldenfile"
)

// moduleReport analyses testdata/module once for the tests that need it.
func moduleReport(t *testing.T) (*Report, string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "module"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Analyze(context.Background(), dir)
	if err != nil {
		t.Fatalf("Analyze: %v", err)
	}
	return rep, dir
}

func TestAnalyze_verdictsByLine(t *testing.T) {
	rep, dir := moduleReport(t)
	abs := filepath.Join(dir, "shapes", "shapes.go")
	tests := []struct {
		name string
		file string
		line int
		want []string // substrings, one per expected note, in order
	}{
		{"moved local by absolute path", abs, 10, []string{"u escapes to heap: flow: ~r0 ← &u", "moved to heap: u"}},
		{"escaping make by trimpath name", "example.com/shapes/shapes/shapes.go", 16, []string{"make([]byte, n) escapes to heap: flow: ~r0 ← &{storage for make([]byte, n)}"}},
		{"stack slice", abs, 21, []string{"make([]int, 8) does not escape"}},
		{"line without verdict", abs, 12, nil},
		{"other file with the same name", "/elsewhere/other/shapes.go", 10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rep.At(tt.file, tt.line)
			if len(got) != len(tt.want) {
				t.Fatalf("At(%s, %d) = %q, want %d notes like %q", tt.file, tt.line, got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("note %d = %q, want it to start with %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestAnalyze_functionAndFlow(t *testing.T) {
	rep, _ := moduleReport(t)
	notes := rep.Notes("shapes/shapes.go", 16)
	if len(notes) != 1 {
		t.Fatalf("Notes = %+v, want one", notes)
	}
	n := notes[0]
	if n.Kind != Escapes || n.Function != "Buffer" || n.Column != 13 {
		t.Errorf("note = %+v, want an Escapes note of Buffer at column 13", n)
	}
	if len(n.Flow) != 3 || !strings.HasPrefix(n.Flow[1], "from make([]byte, n) (spill)") {
		t.Errorf("flow = %q, want the flow line and its two steps", n.Flow)
	}
}

// TestAnalyze_exampleService checks the case diagnose relies on: the leaky
// cache's append, named the way a profile of a locally built binary names
// it (an absolute path).
func TestAnalyze_exampleService(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Analyze(context.Background(), root, "./examples/leakycache")
	if err != nil {
		t.Fatalf("Analyze: %v", err)
	}
	src := filepath.Join(root, "examples", "leakycache", "leakycache.go")
	line := lineOf(t, src, "append(w.cache[id], b...)")
	got := strings.Join(rep.At(src, line), "\n")
	if !strings.Contains(got, "append(w.cache[id], b...) escapes to heap: flow: {heap} ←") {
		t.Errorf("At(leakycache.go, %d) = %q, want the append's escape to the heap", line, got)
	}
	for _, n := range rep.Notes(src, line) {
		if strings.HasPrefix(n.File, "/") || strings.HasPrefix(n.File, "..") {
			t.Errorf("note file %q is not relative to the module", n.File)
		}
	}
}

func TestAnalyze_errors(t *testing.T) {
	broken := t.TempDir()
	write(t, filepath.Join(broken, "go.mod"), "module example.com/broken\n\ngo 1.21\n")
	write(t, filepath.Join(broken, "broken.go"), "package broken\n\nfunc F() int { return undefinedName }\n")
	tests := []struct {
		name string
		dir  string
		want string
	}{
		{"not a module", t.TempDir(), "not a Go module root (no go.mod)"},
		{"build error", broken, "broken.go:3:23: undefined: undefinedName"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Analyze(context.Background(), tt.dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Analyze(%s) error = %v, want it to contain %q", tt.dir, err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
}

func TestAnalyze_canceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Analyze(ctx, filepath.Join("testdata", "module")); err == nil {
		t.Fatal("Analyze with a canceled context succeeded")
	}
}

// TestParse_golden renders every note of a recorded -m=2 output of the
// leaky cache service, so a change in what Parse keeps shows as a diff.
func TestParse_golden(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "leakycache-m2.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, filepath.Join("testdata", "leakycache-m2.golden"), []byte(rep.dump()))
}

func lineOf(t *testing.T, file, needle string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, needle) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line with %q", file, needle)
	return 0
}

func write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestNote_String(t *testing.T) {
	n := Note{Message: "x escapes to heap", Flow: []string{"flow: {heap} ← x:", "from x (spill) at dir/sub/file.go:38:14"}}
	want := "x escapes to heap: flow: {heap} ← x; from x (spill) at file.go:38:14"
	if got := n.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := (Note{Message: "moved to heap: u"}).String(); got != "moved to heap: u" {
		t.Errorf("String() without flow = %q", got)
	}
}

func TestParse_summaryAndDetailAreOneNote(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"detail first", "a.go:2:3: append(s, x) escapes to heap in F:\na.go:2:3:   flow: s ← x:\na.go:2:3: append escapes to heap\n"},
		{"summary first", "a.go:2:3: append escapes to heap\na.go:2:3: append(s, x) escapes to heap in F:\na.go:2:3:   flow: s ← x:\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Parse(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			got := rep.Notes("a.go", 2)
			if rep.Len() != 1 || len(got) != 1 {
				t.Fatalf("notes = %+v, want one", got)
			}
			if got[0].Message != "append(s, x) escapes to heap" || got[0].Function != "F" || len(got[0].Flow) != 1 {
				t.Errorf("note = %+v, want the detailed one with its function and flow", got[0])
			}
		})
	}
}
