package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/compare/comparetest"
	"github.com/heapscope/heapscope/internal/result"
)

// writeRunDir writes a run directory as profile does (result.json and the
// allocs-delta profile) with Process allocating process bytes per request.
func writeRunDir(t *testing.T, process int64, heap uint64) string {
	t.Helper()
	dir := t.TempDir()
	r := comparetest.Run(comparetest.RunOptions{Requests: 1000, Rate: 100, HeapInuse: heap, Sys: 2 * heap})
	smp := comparetest.Sample(dir, r, comparetest.Alloc{Function: "example.com/cache.(*Worker).Process", File: "/src/cache/worker.go", Line: 31, Bytes: process * 1000, Objects: 2000})
	r.Profiles = []result.Profile{{Kind: "allocs-delta", Path: "profiles/allocs-delta.pb.gz"}}
	if err := os.Mkdir(filepath.Join(dir, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := smp.Allocs.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "profiles", "allocs-delta.pb.gz"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	writeResult(t, dir, r)
	return dir
}

func writeResult(t *testing.T, dir string, r any) {
	t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, result.FileName), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCompare_outputsAndGates(t *testing.T) {
	// 12 MiB of Process's allocations a side at the 512 KiB sampling
	// period: a change of 23 samples, which a single run a side tells.
	a, b := writeRunDir(t, 12000, 100<<20), writeRunDir(t, 64, 10<<20)
	html := filepath.Join(t.TempDir(), "compare.html")
	tests := []struct {
		name string
		args []string
		code int
		want []string // in stdout, or in the -o file
		file string
	}{
		{"text", []string{a, b}, exitOK, []string{"bytes per request", "11.7 KiB", "cache.(*Worker).Process", "cache/worker.go:31"}, ""},
		{"markdown", []string{a, b, "--format", "markdown"}, exitOK, []string{"## Memory:", "| bytes per request | 11.7 KiB | 64 B |"}, ""},
		{"json", []string{a, b, "--format", "json"}, exitOK, []string{`"name": "bytes_per_request"`, `"per_unit": "request"`}, ""},
		{"html", []string{a, b, "-o", html}, exitOK, []string{`<table id="figures">`, `class="hsflame" id="allocs-diff"`}, html},
		{"gate passes", []string{a, b, "--fail-on", "bytes_per_request>+5%"}, exitOK, []string{"PASS: 1 gate"}, ""},
		{"gate fails", []string{b, a, "--fail-on", "bytes_per_request>+5%"}, exitGateFailed, []string{"FAIL: 1 of 1 gate failed"}, ""},
		{"site gate fails", []string{b, a, "--fail-on", "Process:bytes_per_request>+0%"}, exitGateFailed, []string{"bytes_per_request of Process"}, ""},
		{"several runs a side", []string{a, a, a, "--", b, b, b}, exitOK, []string{"(3 runs)", "~ (p="}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := heapscope(t, append([]string{"compare"}, tt.args...)...)
			if got.code != tt.code {
				t.Fatalf("exit %d, want %d; stderr: %s", got.code, tt.code, got.stderr)
			}
			out := got.stdout
			if tt.file != "" {
				data, err := os.ReadFile(tt.file)
				if err != nil {
					t.Fatal(err)
				}
				out = string(data)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tt.code == exitGateFailed && !strings.Contains(got.stderr, "gates failed") {
				t.Errorf("stderr %q does not say which gate failed", got.stderr)
			}
		})
	}
}

func TestCompare_badInputExitsWith2(t *testing.T) {
	good := writeRunDir(t, 100, 1<<20)
	empty := t.TempDir()
	newer, older, foreign := t.TempDir(), t.TempDir(), t.TempDir()
	writeResult(t, newer, map[string]any{"schema_version": result.SchemaVersion + 1, "status": "complete"})
	writeResult(t, older, map[string]any{"schema_version": -1})
	writeResult(t, foreign, map[string]any{"name": "not ours"})
	garbage := t.TempDir()
	os.WriteFile(filepath.Join(garbage, result.FileName), []byte("{not json"), 0o644)
	badProfile := writeRunDir(t, 100, 1<<20)
	os.WriteFile(filepath.Join(badProfile, "profiles", "allocs-delta.pb.gz"), []byte("not a profile"), 0o644)
	file := filepath.Join(good, result.FileName)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"one argument", []string{good}, "compare takes two run directories"},
		{"three arguments", []string{good, good, good}, "got 3 arguments"},
		{"empty after side", []string{good, "--"}, "runs on both sides of --"},
		{"empty before side", []string{"--", good}, "runs on both sides of --"},
		{"missing directory", []string{good, filepath.Join(empty, "nope")}, "no such directory"},
		{"not a run", []string{good, empty}, "not a (finished) heapscope run"},
		{"a file", []string{good, filepath.Join(good, "profiles", "allocs-delta.pb.gz")}, "not a run directory"},
		{"newer schema", []string{good, newer}, "newer than the 1 this heapscope reads: upgrade heapscope"},
		{"older schema", []string{good, older}, "older than the 1 this heapscope reads"},
		{"no schema", []string{good, foreign}, "no schema_version"},
		{"malformed result", []string{good, garbage}, "result.json"},
		{"bad profile", []string{good, badProfile}, "allocs-delta.pb.gz"},
		{"bad gate", []string{good, good, "--fail-on", "B/op>+5%"}, "not a headline figure"},
		{"bad output", []string{good, good, "-o", "x.svg"}, "the extension picks the format"},
		{"bad format", []string{good, good, "--format", "xml"}, "xml"},
		{"bad alpha", []string{good, good, "--alpha", "2"}, "--alpha 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := heapscope(t, append([]string{"compare"}, tt.args...)...)
			if got.code != exitUsage {
				t.Fatalf("exit %d, want 2; stderr: %s", got.code, got.stderr)
			}
			if !strings.Contains(got.stderr, tt.want) || strings.Count(strings.TrimSpace(got.stderr), "\n") != 0 {
				t.Errorf("stderr %q, want one line saying %q", got.stderr, tt.want)
			}
		})
	}
	// result.json itself names its run.
	if got := heapscope(t, "compare", file, good); got.code != exitOK {
		t.Errorf("compare RESULT.JSON DIR: exit %d: %s", got.code, got.stderr)
	}
}

func TestCompare_LeakyAgainstOptimizedShowsProcessFalling(t *testing.T) {
	// Five 1 s windows a side, under load on 127.0.0.1: enough runs for
	// the U test to reach p < 0.05 even when a window of a busy machine
	// lands among the other side's.
	// No warm-up: the leaky cache's map doubles its tables now and then,
	// and from empty those steps are small beside each window's growth.
	// Per-site statistics over 1 s windows need samples: at the default
	// rate (one per 512 KiB) Process's 120 B a request is a sample in ten
	// windows. The services sample one allocation in 4 KiB, as heapscope
	// advises when a window is too short to place a site (this tests
	// compare's statistics, not the sampling).
	t.Setenv("GODEBUG", "memprofilerate=4096")
	_, leakyDir := demoRun(t, "leaky", "--duration", "1s", "--repeat", "5", "--snapshots", "2", "--no-cpu", "--warmup", "0")
	_, optimizedDir := demoRun(t, "optimized", "--duration", "1s", "--repeat", "5", "--snapshots", "2", "--no-cpu")

	got := heapscope(t, "compare", leakyDir, optimizedDir, "--format", "json", "--sites", "30", "--fail-on", "bytes_per_request>+0%")
	if got.code != exitOK {
		t.Fatalf("compare: exit %d: %s", got.code, got.stderr)
	}
	var c struct {
		Tested  bool   `json:"tested"`
		PerUnit string `json:"per_unit"`
		Figures []struct {
			Name   string `json:"name"`
			Before *struct {
				Median float64 `json:"median"`
				N      int     `json:"n"`
			} `json:"before"`
			After *struct {
				Median float64 `json:"median"`
			} `json:"after"`
			Test *struct {
				P           float64 `json:"p"`
				Significant bool    `json:"significant"`
			} `json:"test"`
		} `json:"figures"`
		Shrank []struct {
			Function    string `json:"function"`
			File        string `json:"file"`
			Line        int64  `json:"line"`
			BytesBefore struct {
				Median float64 `json:"median"`
			} `json:"bytes_before"`
			BytesAfter struct {
				Median float64 `json:"median"`
			} `json:"bytes_after"`
			Test *struct {
				P           float64 `json:"p"`
				Significant bool    `json:"significant"`
			} `json:"test"`
		} `json:"sites_shrank"`
	}
	if err := json.Unmarshal([]byte(got.stdout), &c); err != nil {
		t.Fatal(err)
	}
	if !c.Tested || c.PerUnit != "request" {
		t.Errorf("tested %v per %s, want windows tested per request", c.Tested, c.PerUnit)
	}
	for _, f := range c.Figures {
		if f.Name != "bytes_per_request" {
			continue
		}
		// The whole request's bytes are mostly the HTTP server's, and
		// Process's share is small beside their noise on a busy machine:
		// the figure must be tested over 5+5 windows, but its direction
		// is not asserted; Process's own lines below are.
		if f.Before == nil || f.After == nil || f.Before.N != 5 || f.Test == nil {
			t.Errorf("bytes_per_request %+v → %+v, test %+v: want it tested over 5 windows a side", f.Before, f.After, f.Test)
		}
		t.Logf("bytes per request: leaky %.0f, optimized %.0f (p=%.3f)", f.Before.Median, f.After.Median, f.Test.P)
	}
	src := filepath.Join("..", "..", "examples", "leakycache", "leakycache.go")
	// Both of Process's lines fall to nothing; the append, about 120 B a
	// request, is far enough above sampling noise to be significant every
	// time, while the conversion (a few tens of bytes) may be sampled at 0
	// in a window.
	for _, tt := range []struct {
		line        int64
		significant bool
	}{
		{sourceLine(t, src, "b := []byte(id)"), false},
		{sourceLine(t, src, "w.cache[id] = append(w.cache[id], b...)"), true},
	} {
		line, found := tt.line, false
		for _, s := range c.Shrank {
			if strings.HasSuffix(s.Function, "leakycache.(*Worker).Process") && filepath.Base(s.File) == "leakycache.go" && s.Line == line {
				found = s.BytesBefore.Median > 0 && s.BytesAfter.Median == 0 && s.Test != nil && (s.Test.Significant || !tt.significant)
				t.Logf("leakycache.go:%d: %.0f → %.0f B/request (%+v)", line, s.BytesBefore.Median, s.BytesAfter.Median, s.Test)
			}
		}
		if !found {
			t.Errorf("the sites that shrank lack Process at leakycache.go:%d falling to 0, significantly: %+v", line, c.Shrank)
		}
	}

	html := filepath.Join(t.TempDir(), "compare.html")
	if got := heapscope(t, "compare", leakyDir, optimizedDir, "-o", html); got.code != exitOK {
		t.Fatalf("compare -o: exit %d: %s", got.code, got.stderr)
	}
	page, err := os.ReadFile(html)
	if err != nil || !bytes.Contains(page, []byte(`class="better"`)) || !bytes.Contains(page, []byte(`"name":"changes"`)) {
		t.Errorf("compare.html lacks a coloured significant change or the flame graph (%v)", err)
	}
}
