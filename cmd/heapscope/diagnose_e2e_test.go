package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/result"
)

// findingAt returns the first finding with the id at file:line (base name).
func findingAt(fs []result.Finding, id, file string, line int64) *result.Finding {
	for i, f := range fs {
		if f.ID == id && filepath.Base(f.File) == file && f.Line == line {
			return &fs[i]
		}
	}
	return nil
}

// withoutPauses leaves out gc.pause findings. A stop-the-world pause's
// length measures the machine as much as the service: on a test machine
// running other tests on every core, the runtime waits for its threads to
// be scheduled and pauses stretch to tens of milliseconds (the finding's
// fix says so). The twins' quiet is about their own code.
func withoutPauses(fs []result.Finding) []result.Finding {
	var out []result.Finding
	for _, f := range fs {
		if f.ID != "gc.pause" {
			out = append(out, f)
		}
	}
	return out
}

func describe(fs []result.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("\n  " + f.Severity + " " + f.ID + " " + f.Title)
	}
	return b.String()
}

// TestDiagnose_BundledServices checks the findings of profile runs
// against the bundled services' known faults: the leaky cache's map, the
// naive KV's JSON maps and mutex; and silence above low about their fixed
// twins. One short run per service serves every assertion about it.
func TestDiagnose_BundledServices(t *testing.T) {
	src := filepath.Join("..", "..", "examples", "leakycache", "leakycache.go")
	cacheAppend := sourceLine(t, src, "w.cache[id] = append(w.cache[id], b...)")

	// No warm-up for the leak: from an empty cache its growth is steady
	// request by request; after a warm-up, the map's table doublings are
	// large beside ten seconds of growth.
	leaky, leakyDir := demoRun(t, "leaky", "--duration", "10s", "--snapshots", "6", "--warmup", "0")
	if f := findingAt(leaky.Findings, "leak.inuse-growth", "leakycache.go", cacheAppend); f == nil || f.Severity != "high" {
		t.Errorf("leaky: want a high leak.inuse-growth at leakycache.go:%d; findings:%s\nnotes: %v\nheap: %+v", cacheAppend, describe(leaky.Findings), leaky.DiagnosisNotes, leaky.HeapGrowth)
	}

	// The same run directory, diagnosed again by the command, gates.
	got := heapscope(t, "diagnose", leakyDir, "--fail-on", "high", "--format", "json")
	if got.code != exitGateFailed || !strings.Contains(got.stderr, "severity high or above") {
		t.Errorf("diagnose --fail-on high of the leaky run: exit %d, stderr %q; want 1", got.code, got.stderr)
	}
	var out report.Findings
	if err := json.Unmarshal([]byte(got.stdout), &out); err != nil || findingAt(out.Findings, "leak.inuse-growth", "leakycache.go", cacheAppend) == nil {
		t.Errorf("diagnose of the run directory lost the leak finding (%v):%s", err, describe(out.Findings))
	}

	// With the source, the leak at the cache's append says why the line
	// allocates, from the compiler, in text and in JSON.
	t.Run("escape analysis of the leak's line", func(t *testing.T) {
		root := filepath.Join("..", "..")
		const why = "append(w.cache[id], b...) escapes to heap"
		text := heapscope(t, "diagnose", leakyDir, "--source", root)
		if text.code != exitOK || text.stderr != "" {
			t.Fatalf("diagnose --source: exit %d, stderr %q", text.code, text.stderr)
		}
		title := fmt.Sprintf("at leakycache.(*Worker).Process (leakycache/leakycache.go:%d)", cacheAppend)
		// A finding's block is its title line ("  SEVERITY title") and the
		// deeper-indented lines under it.
		var block string
		in := false
		for _, line := range strings.Split(text.stdout, "\n") {
			if head := strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   "); head {
				in = strings.Contains(line, title)
			}
			if in {
				block += line + "\n"
			}
		}
		if !strings.Contains(block, "escape: "+why) {
			t.Errorf("text output: the finding %q does not carry %q:\n%s", title, why, text.stdout)
		}
		js := heapscope(t, "diagnose", leakyDir, "--source", root, "--format", "json")
		var out report.Findings
		if err := json.Unmarshal([]byte(js.stdout), &out); err != nil {
			t.Fatalf("diagnose --source --format json: %v\n%s", err, js.stderr)
		}
		f := findingAt(out.Findings, "leak.inuse-growth", "leakycache.go", cacheAppend)
		if f == nil || len(f.Escape) == 0 || !strings.HasPrefix(f.Escape[0], why) {
			t.Errorf("JSON output: the leak at leakycache.go:%d is %+v, want an escape starting %q; findings:%s\nnotes: %v", cacheAppend, f, why, describe(out.Findings), out.Notes)
		}
	})

	// The fixed twins warm up first: a bounded cache filling up to its
	// size in the window would look like growth, as it would to anyone
	// profiling a service that just started.
	optimized, optimizedDir := demoRun(t, "optimized", "--duration", "3s", "--warmup", "2s")
	if quiet := withoutPauses(optimized.Findings); diagnose.AtLeast(quiet, diagnose.Medium) {
		t.Errorf("optimized: findings of medium or above:%s", describe(optimized.Findings))
	}
	// The gate agrees with the run's own findings.
	wantCode := exitOK
	if diagnose.AtLeast(optimized.Findings, diagnose.Medium) {
		wantCode = exitGateFailed
	}
	if got := heapscope(t, "diagnose", optimizedDir, "--fail-on", "medium"); got.code != wantCode {
		t.Errorf("diagnose --fail-on medium of the optimized run: exit %d, want %d\n%s%s", got.code, wantCode, got.stdout, got.stderr)
	}

	naive, _ := demoRun(t, "kv-naive", "--duration", "3s", "--profiles", "mutex", "--connections", "8")
	handler := filepath.Join("..", "..", "examples", "naivekv", "handler.go")
	encodeLine := sourceLine(t, handler, "_ = json.NewEncoder(w).Encode(v)")
	mapLine := sourceLine(t, handler, `writeJSON(w, http.StatusOK, map[string]any{"key": key, "value": value})`)
	if findingAt(naive.Findings, "pattern.json-per-call", "handler.go", encodeLine) == nil &&
		findingAt(naive.Findings, "pattern.json-per-call", "handler.go", mapLine) == nil {
		t.Errorf("kv-naive: want pattern.json-per-call at handler.go:%d or :%d; findings:%s", encodeLine, mapLine, describe(naive.Findings))
	}
	var contention bool
	for _, f := range naive.Findings {
		contention = contention || f.ID == "contention.lock" && strings.Contains(f.Function, "naivekv.")
	}
	if !contention {
		t.Errorf("kv-naive: want a contention.lock finding in naivekv; findings:%s\nnotes: %v", describe(naive.Findings), naive.DiagnosisNotes)
	}

	tuned, _ := demoRun(t, "kv-tuned", "--duration", "3s", "--warmup", "1s", "--profiles", "mutex")
	if quiet := withoutPauses(tuned.Findings); diagnose.AtLeast(quiet, diagnose.Medium) {
		t.Errorf("kv-tuned: findings of medium or above:%s", describe(tuned.Findings))
	}
}
