package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/result"
)

// demoRun runs heapscope demo against a bundled example in a child process
// and returns its result and run directory.
func demoRun(t *testing.T, example string, args ...string) (*result.Run, string) {
	t.Helper()
	out := t.TempDir()
	args = append([]string{"demo", "--example", example, "--out", out, "--format", "json"}, args...)
	got := heapscope(t, args...)
	if got.code != exitOK {
		t.Fatalf("demo %s: exit %d\nstderr: %s", example, got.code, got.stderr)
	}
	var res result.Run
	if err := json.Unmarshal([]byte(got.stdout), &res); err != nil {
		t.Fatalf("demo %s: stdout is not result JSON: %v", example, err)
	}
	if res.Status != result.StatusComplete {
		t.Fatalf("demo %s: status %s, failures %+v", example, res.Status, res.Failures)
	}
	if res.Load == nil || res.Load.Completed == 0 || res.Load.Errors != 0 {
		t.Fatalf("demo %s: load %+v, want requests and no errors", example, res.Load)
	}
	dirs, err := filepath.Glob(filepath.Join(out, "*"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("demo %s: run directories %v, want one", example, dirs)
	}
	return &res, dirs[0]
}

func stackHas(s *profile.Sample, function string) bool {
	for _, l := range s.Location {
		for _, ln := range l.Line {
			if ln.Function != nil && strings.HasSuffix(ln.Function.Name, function) {
				return true
			}
		}
	}
	return false
}

// sourceLine returns the line number of the first line of a source file
// that contains marker.
func sourceLine(t *testing.T, file, marker string) int64 {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := int64(1); sc.Scan(); n++ {
		if strings.Contains(sc.Text(), marker) {
			return n
		}
	}
	t.Fatalf("no line of %s contains %q", file, marker)
	return 0
}

func hasLine(tab *result.TopTable, function, file string, line int64) bool {
	for _, s := range tab.Sites {
		if strings.HasSuffix(s.Function, function) && filepath.Base(s.File) == file && s.Line == line {
			return true
		}
	}
	return false
}

func TestDemo_NamesTheLeakAndNotItsFix(t *testing.T) {
	leaky, _ := demoRun(t, "leaky", "--duration", "6s")
	optimized, _ := demoRun(t, "optimized", "--duration", "6s")

	src := filepath.Join("..", "..", "examples", "leakycache", "leakycache.go")
	cacheAppend := sourceLine(t, src, "w.cache[id] = append(w.cache[id], b...)")
	const process = "leakycache.(*Worker).Process"

	// At the runtime's default sampling rate, as the demo runs: the
	// verdicts, and the live heap they stand on.
	judge(t, "demo, leaky cache, 6 s", leaky.Findings, leaky.DiagnosisNotes,
		want{id: "leak.inuse-growth", file: "leakycache.go", line: cacheAppend, min: diagnose.Medium})
	judge(t, "demo, optimized cache, 6 s", optimized.Findings, optimized.DiagnosisNotes)
	if inuse := leaky.TopFor("inuse_space"); !hasLine(inuse, process, "leakycache.go", cacheAppend) {
		t.Errorf("inuse_space top sites lack the cache append at leakycache.go:%d", cacheAppend)
	}

	// What the leak keeps, from the exact live heap: a map entry, its
	// key's request line and a small slice per new id, over 100 B a
	// request. (The fix's figure is not compared: its bounded cache's
	// churn between GCs moves it by hundreds of bytes a request over a
	// short window; its verdict, above, is what counts.)
	g := leaky.HeapGrowth
	if g == nil || g.Live == nil || leaky.Load == nil || leaky.Load.Completed == 0 {
		t.Fatalf("leaky: no live heap series or load: %+v", g)
	}
	if kept := float64(g.Live.GrowthBytes) / float64(leaky.Load.Completed); kept < 100 {
		t.Errorf("the live heap keeps %.0f B/request in the leaky cache, want over 100 B", kept)
	}
}

func TestDemo_NaiveKVNamesJSONAndMapPerResponse(t *testing.T) {
	// Back to back on 4 connections: at the runtime's default sampling
	// rate, enough allocations for the top sites to be stable.
	naive, dir := demoRun(t, "kv-naive", "--duration", "3s", "--connections", "4")
	if !strings.HasPrefix(filepath.Base(dir), "naivekv-") {
		t.Errorf("run directory %s, want it named by the example's program", dir)
	}
	alloc := naive.TopFor("alloc_space")
	var json, naivekv bool
	for _, s := range alloc.Sites {
		json = json || strings.HasPrefix(s.Function, "encoding/json.")
		naivekv = naivekv || strings.Contains(s.Function, "naivekv.")
	}
	if !json || !naivekv {
		t.Errorf("alloc_space top sites name encoding/json: %v, naivekv: %v; sites: %+v", json, naivekv, alloc.Sites)
	}
	if naive.PerRequest == nil || naive.PerRequest.ObjectsPerRequest <= 0 {
		t.Errorf("per-request figures %+v", naive.PerRequest)
	}
	mapLine := sourceLine(t, filepath.Join("..", "..", "examples", "naivekv", "handler.go"), "writeJSON(w, http.StatusOK, map[string]any{")
	if !hasLine(alloc, "naivekv.(*handler).kv", "handler.go", mapLine) {
		t.Errorf("alloc_space top sites lack the per-response map at handler.go:%d", mapLine)
	}
	var mutex bool
	for _, p := range naive.Profiles {
		mutex = mutex || p.Kind == "mutex"
	}
	if !mutex {
		t.Error("the demo of kv-naive kept no mutex profile: its store lock is what examples/README says it shows")
	}
	var lock bool
	for _, f := range naive.Findings {
		lock = lock || f.ID == "contention.lock" && strings.Contains(f.Function, "naivekv.")
	}
	if !lock {
		t.Errorf("no contention.lock finding in naivekv; findings:%s", describe(naive.Findings))
	}
}
