package view

import (
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/problem"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/store/storetest"
)

// TestServer_indexLeadsWithTheAnswer opens recorded runs (the leaky
// example's, and one whose target died mid-window) and the first as a
// bundle: the index says what the run lacks, its findings the most
// severe first with their symptoms, and a bundle's comparison and
// missing files, before the profiles.
func TestServer_indexLeadsWithTheAnswer(t *testing.T) {
	tests := []struct {
		name, fixture string
		bundle        bool
		// compareJSON gives the bundle its comparison's compare.json, as
		// a bundle with a baseline has.
		compareJSON bool
		// reorder writes the findings least severe first, the worst
		// with a symptom folded in.
		reorder bool
	}{
		{"a run", storetest.Leaky, false, false, false},
		{"findings least severe first", storetest.Leaky, false, false, true},
		{"a partial run", storetest.Partial, false, false, false},
		{"a bundle without a baseline", storetest.Leaky, true, false, false},
		{"a bundle", storetest.Leaky, true, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			storetest.WriteFixture(t, tt.fixture, dir)
			res := storetest.Fixture(t, tt.fixture)
			if tt.reorder {
				slices.Reverse(res.Findings)
				for i := range res.Findings {
					if res.Findings[i].Severity == "high" {
						res.Findings[i].Symptoms = append(res.Findings[i].Symptoms, result.Symptom{ID: "leak.goroutine-growth", Severity: "medium",
							Title: "goroutines blocked in the cache's worker grow 12/min", Function: "example.com/cache.(*Worker).wait", File: "/src/cache/worker.go", Line: 60})
					}
				}
				data, err := json.Marshal(res)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, result.FileName), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			const compareMD, missing = "## Memory: `runs/a/20260301T120000Z` → `this bundle`\n", "memory.stat: no cgroup\n"
			if tt.bundle {
				os.WriteFile(filepath.Join(dir, "compare.md"), []byte(compareMD), 0o644)
				os.WriteFile(filepath.Join(dir, "missing.txt"), []byte(missing), 0o644)
			}
			if tt.compareJSON {
				os.WriteFile(filepath.Join(dir, "compare.json"), []byte("{}\n"), 0o644)
			}
			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			r := get(t, s, "/")
			if r.code != 200 {
				t.Fatalf("GET /: %d %s", r.code, r.body)
			}
			body := html.UnescapeString(r.body)
			want := []string{`<p id="status" class="status-` + string(res.Status) + `">`, "<h2>Verdict</h2>", `href="run/result.json"`}
			for _, f := range res.Failures {
				want = append(want, f.Step, f.Error)
			}
			for _, u := range res.Unmeasured {
				want = append(want, u.Figure, u.Reason)
			}
			if tt.bundle {
				want = append(want, "<title>Bundle of "+res.Target.URL+"</title>", `<pre id="comparison">`+compareMD,
					strings.TrimSpace(missing), `href="run/compare.md"`, `href="run/missing.txt"`)
			}
			// In the page's order: the worst first, the run's order
			// among equals.
			byRank := slices.Clone(res.Findings)
			slices.SortStableFunc(byRank, func(a, b result.Finding) int { return problem.Rank(b.Severity) - problem.Rank(a.Severity) })
			last := 0
			for _, f := range byRank {
				row := `<tr class="severity-` + f.Severity + `"><td>` + f.Severity + `</td><td>` + f.Title
				i := strings.Index(body, row)
				if i < 0 {
					t.Errorf("no finding row %q", row)
					continue
				}
				if i < last {
					t.Errorf("finding %q (%s) before a more severe one", f.Title, f.Severity)
				}
				last = i
				for _, sy := range f.Symptoms {
					want = append(want, "<li>"+sy.Severity+": "+sy.Title+" (cache.(*Worker).wait (cache/worker.go:60))</li>")
				}
			}
			if len(res.Findings) == 0 {
				want = append(want, "No finding")
			}
			for _, w := range want {
				if !strings.Contains(body, w) {
					t.Errorf("index: no %q", w)
				}
			}
			// The comparison's files are linked when they are there: a
			// bundle whose comparison failed, or that had no baseline,
			// has compare.md saying so, and no compare.json.
			for _, name := range []string{"compare.md", "compare.json"} {
				_, err := os.Stat(filepath.Join(dir, name))
				if linked := strings.Contains(body, `href="run/`+name+`"`); linked != (err == nil) {
					t.Errorf("index links run/%s: %t; the file is there: %t", name, linked, err == nil)
				}
			}
			if strings.Index(body, "<h2>Verdict</h2>") > strings.Index(body, `id="profiles"`) {
				t.Error("index: the verdict after the profiles")
			}
			if t.Failed() {
				t.Logf("index:\n%s", r.body)
			}
		})
	}
}
