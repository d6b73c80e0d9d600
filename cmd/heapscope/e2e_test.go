package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/pprofx"
	"github.com/heapscope/heapscope/internal/result"
)

// demoRun runs heapscope demo against a bundled example in a child process
// and returns its result and run directory.
func demoRun(t *testing.T, example string, args ...string) (*result.Run, string) {
	t.Helper()
	t.Setenv(asMainEnv, "1")
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

// inuseIn sums inuse_space of the samples whose stack passes through a
// function with the given suffix, in one profile of the run directory.
func inuseIn(t *testing.T, dir, profilePath, function string) int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, profilePath))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pprofx.Parse(data, pprofx.DefaultMaxDecompressed)
	if err != nil {
		t.Fatal(err)
	}
	si, err := pprofx.SampleIndex(p, "inuse_space")
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, s := range p.Sample {
		if stackHas(s, function) {
			sum += s.Value[si]
		}
	}
	return sum
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

// siteBytes sums the flat values of the table's sites in the function.
func siteBytes(tab *result.TopTable, function string) int64 {
	var sum int64
	for _, s := range tab.Sites {
		if strings.HasSuffix(s.Function, function) {
			sum += s.Flat
		}
	}
	return sum
}

func hasLine(tab *result.TopTable, function, file string, line int64) bool {
	for _, s := range tab.Sites {
		if strings.HasSuffix(s.Function, function) && filepath.Base(s.File) == file && s.Line == line {
			return true
		}
	}
	return false
}

// lateGrowth is how much the function's inuse_space grew between the last
// two heap snapshots, after any warm-up at the start of the window.
func lateGrowth(t *testing.T, r *result.Run, dir, function string) int64 {
	t.Helper()
	s := r.HeapGrowth.Snapshots
	return inuseIn(t, dir, s[len(s)-1].Profile, function) - inuseIn(t, dir, s[len(s)-2].Profile, function)
}

func TestDemo_NamesTheLeakAndNotItsFix(t *testing.T) {
	leaky, leakyDir := demoRun(t, "leaky", "--duration", "6s")
	optimized, optimizedDir := demoRun(t, "optimized", "--duration", "6s")

	src := filepath.Join("..", "..", "examples", "leakycache", "leakycache.go")
	conversion := sourceLine(t, src, "b := []byte(id)")
	cacheAppend := sourceLine(t, src, "w.cache[id] = append(w.cache[id], b...)")
	const process = "leakycache.(*Worker).Process"

	alloc := leaky.TopFor("alloc_space")
	for _, line := range []int64{conversion, cacheAppend} {
		if !hasLine(alloc, process, "leakycache.go", line) {
			t.Errorf("alloc_space top sites lack %s at leakycache.go:%d: %+v", process, line, alloc.Sites)
		}
	}
	if inuse := leaky.TopFor("inuse_space"); !hasLine(inuse, process, "leakycache.go", cacheAppend) {
		t.Errorf("inuse_space top sites lack the cache append at leakycache.go:%d", cacheAppend)
	}
	if g := leaky.HeapGrowth; g.GrowthBytes <= 0 || g.SlopeBytesPerMinute <= 0 {
		t.Errorf("leaky heap growth %+v, want inuse growing across snapshots", g)
	}

	// The twins under the same load: the leak's figures are several times
	// the fix's.
	perRequest := func(r *result.Run, function string) float64 {
		return float64(siteBytes(r.TopFor("alloc_space"), function)) / float64(r.Load.Completed)
	}
	leakyCost := perRequest(leaky, process)
	fixedCost := perRequest(optimized, "optimizedcache.(*Worker).AppendProcess") + perRequest(optimized, "optimizedcache.(*Worker).Process")
	if leakyCost < 100 || leakyCost < 3*fixedCost {
		t.Errorf("Process allocates %.0f B/request leaky against %.0f B/request optimized: want at least 3 times", leakyCost, fixedCost)
	}
	leakyLate := lateGrowth(t, leaky, leakyDir, process)
	fixedLate := lateGrowth(t, optimized, optimizedDir, "optimizedcache.(*Worker).AppendProcess")
	if leakyLate < 8<<10 || leakyLate < 3*max(fixedLate, 0) {
		t.Errorf("Process's inuse grew %d bytes leaky against %d optimized over the window's second half: want the leak's growth several times the fix's", leakyLate, fixedLate)
	}
	t.Logf("per request in Process: leaky %.0f B, optimized %.0f B; late inuse growth: leaky %d B, optimized %d B", leakyCost, fixedCost, leakyLate, fixedLate)
}

func TestDemo_NaiveKVNamesJSONAndMapPerResponse(t *testing.T) {
	// Back to back on 4 connections: at the runtime's default sampling
	// rate, enough allocations for the top sites to be stable.
	naive, _ := demoRun(t, "kv-naive", "--duration", "3s", "--connections", "4", "--profiles", "mutex")
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
		t.Error("the mutex profile asked for with --profiles was not kept")
	}
}
