package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/heapscope/heapscope/internal/result"
)

// allocating keeps a goroutine allocating with a small GOGC until the
// test ends, so that a trace of this process holds GC cycles.
func allocating(t *testing.T) {
	t.Helper()
	old := debug.SetGCPercent(20)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var keep [][]byte
		for {
			select {
			case <-stop:
				return
			default:
			}
			keep = append(keep, make([]byte, 32<<10))
			if len(keep) > 128 {
				keep = keep[:0]
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
		debug.SetGCPercent(old)
	})
}

func TestTrace_Target(t *testing.T) {
	srv := pprofServer(t, map[string]http.HandlerFunc{"/debug/pprof/trace": pprof.Trace})
	allocating(t)
	dir := t.TempDir()
	svg := filepath.Join(dir, "gc.svg")
	saved := filepath.Join(dir, "trace.out")
	got := heapscope(t, "trace", srv.URL, "-d", "1s", "--format", "json", "-o", svg, "--save", saved)
	if got.code != exitOK {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	var res result.Trace
	if err := json.Unmarshal([]byte(got.stdout), &res); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, got.stdout)
	}
	s := res.Summary
	if s.Cycles == 0 || len(res.Cycles) != s.Cycles {
		t.Errorf("%d cycles (%d listed) in a second of an allocating process", s.Cycles, len(res.Cycles))
	}
	if s.DurationSeconds < 0.5 || s.DurationSeconds > 10 {
		t.Errorf("trace of %vs, want about 1s", s.DurationSeconds)
	}
	if s.GCShare <= 0 || s.GCShare > 1 || s.STWShare <= 0 || s.STWShare > s.GCShare+0.5 {
		t.Errorf("GC share %v, STW share %v", s.GCShare, s.STWShare)
	}
	if s.PauseMaxSeconds <= 0 || s.PauseMaxSeconds > s.DurationSeconds || s.PauseP50Seconds > s.PauseMaxSeconds {
		t.Errorf("pauses p50 %v max %v", s.PauseP50Seconds, s.PauseMaxSeconds)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	wellFormedXML(t, data)

	// The saved trace reads back to the same timeline.
	again := heapscope(t, "trace", saved, "--format", "json")
	if again.code != exitOK {
		t.Fatalf("exit %d reading the saved trace: %s", again.code, again.stderr)
	}
	if again.stdout != got.stdout {
		t.Error("the saved trace gives another timeline than the captured one")
	}
	text := heapscope(t, "trace", saved)
	for _, want := range []string{"GC cycles", "time in GC", "stopped (STW)", "sweep-term"} {
		if !strings.Contains(text.stdout, want) {
			t.Errorf("text output lacks %q:\n%s", want, text.stdout)
		}
	}
}

func TestTrace_BadInput(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.out")
	os.WriteFile(garbage, []byte("this is not a trace"), 0o644)
	real, err := os.ReadFile("../../internal/exectrace/testdata/alloc.trace")
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.out")
	os.WriteFile(truncated, real[:len(real)/2], 0o644)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	noTrace := pprofServer(t, nil)
	out := filepath.Join(dir, "out.svg")

	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"not a trace", []string{"trace", garbage, "-o", out}, "not a Go execution trace"},
		{"truncated", []string{"trace", truncated, "-o", out}, "truncated or corrupt"},
		{"unreachable target", []string{"trace", closedURL, "-d", "1s", "-o", out}, "cannot reach"},
		{"no trace endpoint", []string{"trace", noTrace.URL, "-d", "1s", "-o", out}, "trace"},
		{"neither file nor URL", []string{"trace", filepath.Join(dir, "nope"), "-o", out}, "neither a trace file nor a target URL"},
		{"fractional seconds", []string{"trace", "http://127.0.0.1:1", "-d", "1500ms"}, "whole seconds"},
		{"bad extension", []string{"trace", garbage, "-o", filepath.Join(dir, "x.png")}, "use .svg or .html"},
		{"bad format", []string{"trace", garbage, "--format", "xml"}, "--format"},
		{"save with a file", []string{"trace", truncated, "--save", filepath.Join(dir, "s.out")}, "--save"},
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
			if n := strings.Count(strings.TrimSpace(got.stderr), "\n"); n > 1 {
				t.Errorf("error spans %d lines: %q", n+1, got.stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written despite the error", out)
			}
		})
	}
}
