package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/result"
)

// The verdicts at default settings on the bundled examples, judged live
// by TestProfile_VerdictsAtDefaultSettings (bench/accuracy.sh) and on its
// recorded runs by TestDiagnose_RecordedVerdictRuns.

// verdictTest names the live test, and the directory of its recorded runs
// under testdata/recorded.
const verdictTest = "TestProfile_VerdictsAtDefaultSettings"

// twins are the fixed examples that must stay quiet under their own load,
// and twinRounds how many runs of each.
var twins = []string{"optimized", "kv-tuned"}

const twinRounds = 5

// leakyCaseName is the leaky cache's case as the accuracy table names it.
const leakyCaseName = "leaky cache, README's profile command (30 s, 500/s)"

// twinCaseName is a twin's run as the accuracy table names it.
func twinCaseName(name string, round int) string {
	return fmt.Sprintf("%s, 10 s at 500/s, run %d of %d", name, round, twinRounds)
}

// twinRunName is the directory of a twin's recorded run.
func twinRunName(name string, round int) string { return fmt.Sprintf("%s-%d", name, round) }

// leakyCacheAppend is the line of the leaky cache's leak.
func leakyCacheAppend(t *testing.T) int64 {
	t.Helper()
	src := filepath.Join("..", "..", "examples", "leakycache", "leakycache.go")
	return sourceLine(t, src, "w.cache[id] = append(w.cache[id], b...)")
}

// judgeLeaky judges the leaky cache's verdict: the leak at the cache's
// append, medium or higher, with the exact growth of the live heap and
// the samples behind its site.
func judgeLeaky(t *testing.T, fs []result.Finding, notes []string, cacheAppend int64) {
	t.Helper()
	judge(t, leakyCaseName, fs, notes,
		want{id: "leak.inuse-growth", file: "leakycache.go", line: cacheAppend, min: diagnose.Medium})
	if f := findingAt(fs, "leak.inuse-growth", "leakycache.go", cacheAppend); f != nil && (!strings.Contains(f.Title, "exact") || f.Evidence["site_samples"] <= 0) {
		t.Errorf("leaky: finding %q (evidence %v) does not give the exact growth and the samples behind its site", f.Title, f.Evidence)
	}
}
