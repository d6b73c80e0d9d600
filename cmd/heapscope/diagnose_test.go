package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
)

func TestDiagnose_BadInput(t *testing.T) {
	dir := t.TempDir()
	heap := heapProfileFile(t)
	notProfile := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notProfile, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var tc bytes.Buffer
	if err := pprof.Lookup("threadcreate").WriteTo(&tc, 0); err != nil {
		t.Fatal(err)
	}
	threads := filepath.Join(dir, "threadcreate.pb.gz")
	if err := os.WriteFile(threads, tc.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	badConfig := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(badConfig, []byte("leak:\n  min_r2: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no arguments", []string{"diagnose"}, "RUN_DIR or one or more PROFILE"},
		{"unknown format", []string{"diagnose", heap, "--format", "yaml"}, "yaml"},
		{"gate on info", []string{"diagnose", heap, "--fail-on", "info"}, "choose low, medium or high"},
		{"bad config", []string{"diagnose", heap, "--config", badConfig}, "leak.min_r2 2"},
		{"missing config", []string{"diagnose", heap, "--config", filepath.Join(dir, "none.yml")}, "read --config"},
		{"not a profile", []string{"diagnose", notProfile}, "notes.txt"},
		{"wrong kind of profile", []string{"diagnose", threads}, "not of a heap, allocs, goroutine, CPU, block or mutex profile"},
		{"a directory that is not a run", []string{"diagnose", dir}, "not a (finished) heapscope run"},
		{"source not a directory", []string{"diagnose", heap, "--source", notProfile}, "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := heapscope(t, tt.args...)
			if got.code != exitUsage {
				t.Errorf("exit %d, want %d; stderr %q", got.code, exitUsage, got.stderr)
			}
			if !strings.Contains(got.stderr, tt.want) || strings.Count(strings.TrimSpace(got.stderr), "\n") > 0 {
				t.Errorf("stderr %q, want one line containing %q", got.stderr, tt.want)
			}
		})
	}
}

func TestDiagnose_OneSnapshotSaysWhatItCounts(t *testing.T) {
	heap := heapProfileFile(t)
	got := heapscope(t, "diagnose", heap, heap, "--format", "json", "--fail-on", "low")
	// The same file twice is two snapshots taken at the same time: not a
	// series of one process.
	if got.code != exitOK || !strings.Contains(got.stdout, "were taken at the same time or out of order") {
		t.Errorf("exit %d, stdout %s, stderr %s", got.code, got.stdout, got.stderr)
	}
	got = heapscope(t, "diagnose", heap)
	if got.code != exitOK || !strings.Contains(got.stdout, "one heap profile: allocations are counted since the process started") {
		t.Errorf("exit %d, stdout %s, stderr %s", got.code, got.stdout, got.stderr)
	}
}
