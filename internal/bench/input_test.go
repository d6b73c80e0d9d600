package bench

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/gate"
)

func TestReadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "old.txt")
	os.WriteFile(file, []byte("BenchmarkX 1 2 ns/op\n"), 0o644)
	tests := []struct {
		name, path string
		stdin      io.Reader
		label      string
		wantErr    string
	}{
		{name: "file", path: file, label: file},
		{name: "stdin", path: "-", stdin: strings.NewReader("BenchmarkX 1 2 ns/op\n"), label: "stdin"},
		{name: "missing", path: filepath.Join(dir, "nope.txt"), wantErr: "open " + filepath.Join(dir, "nope.txt")},
		{name: "too large", path: "-", stdin: strings.NewReader(strings.Repeat("x", MaxInput+1)), wantErr: "read stdin: larger than 67108864 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := ReadInput(tt.path, tt.stdin)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(in.R)
			if in.Label != tt.label || string(data) != "BenchmarkX 1 2 ns/op\n" {
				t.Errorf("input %q with %q, want %q with the file's lines", in.Label, data, tt.label)
			}
		})
	}
}

func TestRunResult_Save(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	res := &RunResult{Old: []byte("old"), New: []byte("new"),
		Profiles: []ProfilePair{{Benchmark: "BenchmarkWorker/Process 1", Old: []byte("p1"), New: []byte("p2")}}}
	if err := res.Save(dir); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"base.txt": "old", "new.txt": "new",
		"mem-BenchmarkWorker_Process_1-base.pprof": "p1", "mem-BenchmarkWorker_Process_1-new.pprof": "p2"} {
		if data, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(data) != want {
			t.Errorf("%s: %q, %v; want %q", name, data, err, want)
		}
	}
}

func TestReport_GateError(t *testing.T) {
	pass := Decision{Gate: "B/op>+5%", Benchmark: "A", Outcome: gate.Pass}
	fail := func(b string) Decision {
		return Decision{Gate: "B/op>+5%", Benchmark: b, Outcome: gate.Fail, Reason: "+9% (p=0.008)"}
	}
	tests := []struct {
		name      string
		decisions []Decision
		want      string
	}{
		{name: "none failed", decisions: []Decision{pass}},
		{name: "one", decisions: []Decision{pass, fail("B")}, want: "1 gate decision failed: B/op>+5% on B: +9% (p=0.008)"},
		{name: "two", decisions: []Decision{fail("B"), fail("C")}, want: "2 gate decisions failed: B/op>+5% on B: +9% (p=0.008); B/op>+5% on C: +9% (p=0.008)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Report{Decisions: tt.decisions}).GateError()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || err.Error() != tt.want) {
				t.Errorf("GateError = %v, want %q", err, tt.want)
			}
		})
	}
}
