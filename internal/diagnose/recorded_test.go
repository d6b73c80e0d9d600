package diagnose

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/pprofx"
)

// recordedSeries reads a series of heap snapshots recorded by
// testdata/gen, as diagnose reads bare profiles: without the pprof
// handlers' own allocations, in the order of their timestamps.
func recordedSeries(t *testing.T, name string) []Profile {
	t.Helper()
	out := readProfiles(t, filepath.Join("testdata", "series", name, "heap-*.pb.gz"), true)
	if len(out) != 5 {
		t.Fatalf("series %s: %d files, want 5: run go run -trimpath ./testdata/gen", name, len(out))
	}
	return out
}

// readProfiles reads the profiles the pattern matches, oldest first;
// heap profiles without the profiler's own allocations when heap.
func readProfiles(t *testing.T, pattern string, heap bool) []Profile {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no profiles (%v)", pattern, err)
	}
	var out []Profile
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := pprofx.Parse(data, pprofx.DefaultMaxDecompressed)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if heap {
			p, _ = pprofx.WithoutProfiler(p)
		}
		out = append(out, Profile{Name: f, Time: time.Unix(0, p.TimeNanos), Profile: p})
	}
	slices.SortFunc(out, func(a, b Profile) int { return a.Time.Compare(b.Time) })
	return out
}

// TestRun_recordedSeries diagnoses real heap snapshot series of the
// bundled caches: the leaky one's growth is named at the line that
// appends to the cache, the optimized one is left alone.
func TestRun_recordedSeries(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "leakycache", "leakycache.go"))
	if err != nil {
		t.Fatal(err)
	}
	cacheAppend := int64(slices.IndexFunc(strings.Split(string(src), "\n"), func(l string) bool {
		return strings.Contains(l, "w.cache[id] = append(w.cache[id], b...)")
	})) + 1

	tests := []struct {
		series string
		leak   bool // a high leak.inuse-growth at the cache append; else nothing of medium or above
	}{
		{series: "leaky", leak: true},
		{series: "optimized", leak: false},
	}
	for _, tt := range tests {
		t.Run(tt.series, func(t *testing.T) {
			rep := Run(Input{Heap: recordedSeries(t, tt.series)})
			if !tt.leak {
				for _, f := range rep.Findings {
					if SeverityOf(f) >= Medium {
						t.Errorf("finding of medium or above: %s %s %s", f.Severity, f.ID, f.Title)
					}
				}
				return
			}
			var leak bool
			for _, f := range findingsWith(rep.Findings, "leak.inuse-growth") {
				if filepath.Base(f.File) == "leakycache.go" && f.Line == cacheAppend && strings.HasSuffix(f.Function, "leakycache.(*Worker).Process") {
					leak = true
					if f.Severity != "high" || f.Evidence["snapshots"] != 5 || f.Evidence["r2"] < 0.9 {
						t.Errorf("leak at the cache append: severity %s, evidence %v; want high over 5 snapshots with R² ≥ 0.9", f.Severity, f.Evidence)
					}
				}
			}
			if !leak {
				t.Errorf("no leak.inuse-growth at leakycache.go:%d; findings:", cacheAppend)
				for _, f := range rep.Findings {
					t.Logf("  %s %s %s", f.Severity, f.ID, f.Title)
				}
			}
		})
	}
}
