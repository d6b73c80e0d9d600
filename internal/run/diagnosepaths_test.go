package run

import (
	"os"
	"path/filepath"
	"runtime"
	rpprof "runtime/pprof"
	"strings"
	"testing"
)

func TestDiagnosePaths(t *testing.T) {
	dir := t.TempDir()
	heap := filepath.Join(dir, "heap.pb.gz")
	f, err := os.Create(heap)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	if err := rpprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	notModule := t.TempDir()
	thresholds, goodThresholds := filepath.Join(dir, "thresholds.yml"), filepath.Join(dir, "good.yml")
	if err := os.WriteFile(thresholds, []byte("leak:\n  min_r2: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goodThresholds, []byte("leak:\n  min_r2: 0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		paths    []string
		opts     Diagnosis
		wantErr  string
		wantWarn string
	}{
		{name: "bare profile", paths: []string{heap}},
		{name: "source without go.mod", paths: []string{heap}, opts: Diagnosis{SourceDir: notModule},
			wantWarn: "findings come without escape analysis: read module path of " + notModule + ": not a Go module root"},
		{name: "directory and profiles", paths: []string{dir, heap}, wantErr: "diagnose takes one RUN_DIR, or profiles: " + dir + " is a directory"},
		{name: "directory that is not a run", paths: []string{dir}, wantErr: "is not a (finished) heapscope run"},
		{name: "nothing", wantErr: "no run directory or profile"},
		{name: "thresholds", paths: []string{heap}, opts: Diagnosis{ThresholdsFile: goodThresholds}},
		{name: "missing thresholds", paths: []string{heap}, opts: Diagnosis{ThresholdsFile: filepath.Join(dir, "none.yml")}, wantErr: "read ThresholdsFile: open "},
		{name: "bad thresholds", paths: []string{heap}, opts: Diagnosis{ThresholdsFile: thresholds}, wantErr: "ThresholdsFile " + thresholds + ": check thresholds: leak.min_r2 2"},
		{name: "source not a directory", paths: []string{heap}, opts: Diagnosis{SourceDir: heap}, wantErr: "SourceDir " + heap + ": not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, warnings, err := DiagnosePaths(t.Context(), tt.paths, tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.wantWarn == "" && len(warnings) > 0:
				t.Errorf("warnings %v, want none", warnings)
			case tt.wantWarn != "" && (len(warnings) != 1 || !strings.Contains(warnings[0].Error(), tt.wantWarn)):
				t.Errorf("warnings %v, want one with %q", warnings, tt.wantWarn)
			}
		})
	}
}
