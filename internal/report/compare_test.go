package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/compare/comparetest"
	"github.com/heapscope/heapscope/internal/flame"
	"github.com/heapscope/heapscope/internal/gate"
	"github.com/heapscope/heapscope/internal/goldenfile"
	"github.com/heapscope/heapscope/internal/result"
)

const (
	processFn = "example.com/cache.(*Worker).Process"
	encodeFn  = "encoding/json.(*encodeState).marshal"
	newFn     = "example.com/cache.(*LRU).Add"
)

// cacheSide is n runs of a cache service: Process allocating process bytes
// per request, the LRU's Add lru bytes, with seeded noise of a few percent
// on every figure when n > 1.
func cacheSide(label string, n int, process, lru float64, heap uint64, goVersion string, findings []result.Finding, seed uint64) compare.Side {
	rng := rand.New(rand.NewPCG(seed, 3))
	noise := func(v float64) float64 {
		if n == 1 {
			return v
		}
		return v * (1 + (rng.Float64()-0.5)*0.06)
	}
	side := compare.Side{Label: label}
	for i := range n {
		const reqs = 20000
		r := comparetest.Run(comparetest.RunOptions{
			Duration: 20, Requests: reqs, Rate: 1000, GoVersion: goVersion,
			HeapInuse: uint64(noise(float64(heap))), Sys: uint64(noise(float64(heap) * 1.6)), RSS: uint64(noise(float64(heap) * 1.8)),
			AllocRate: noise((process + lru + 300) * 1000), GCPerSecond: noise(process / 100), PauseP99: noise(0.00031), PauseMax: noise(0.0007),
			GCCPU: noise(0.012 * process / 100), LatencyP50: noise(0.0009), LatencyP99: noise(0.0042),
			Env: map[string]string{"GOGC": "100"}, Findings: findings,
		})
		allocs := []comparetest.Alloc{
			{Function: processFn, File: "/src/cache/worker.go", Line: 31, Bytes: int64(noise(process) * reqs), Objects: 2 * reqs},
			{Function: encodeFn, File: "/usr/lib/go/src/encoding/json/encode.go", Line: 298, Bytes: int64(noise(300) * reqs), Objects: 4 * reqs},
		}
		if lru > 0 {
			allocs = append(allocs, comparetest.Alloc{Function: newFn, File: "/src/cache/lru.go", Line: 58, Bytes: int64(noise(lru) * reqs), Objects: reqs})
		}
		label := label
		if n > 1 {
			label = fmt.Sprintf("%s/windows/%03d", label, i+1)
		}
		side.Samples = append(side.Samples, comparetest.Sample(label, r, allocs...))
	}
	return side
}

func gates(t *testing.T, exprs ...string) []gate.Gate {
	t.Helper()
	var gs []gate.Gate
	for _, e := range exprs {
		g, err := compare.ParseGate(e)
		if err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	return gs
}

func comparisons(t *testing.T) map[string]*compare.Comparison {
	t.Helper()
	leak := result.Finding{ID: "leak.inuse-growth", Severity: "high", Title: "in-use heap grows at a site", Function: processFn, File: "/src/cache/worker.go", Line: 31}
	single, err := compare.Compare(
		cacheSide("runs/leaky", 1, 1200, 0, 180<<20, "go1.26.0", []result.Finding{leak}, 1),
		cacheSide("runs/optimized", 1, 64, 48, 12<<20, "go1.26.1", nil, 2),
		compare.Options{Gates: gates(t, "bytes_per_request>+5%", "heap_inuse_bytes<-50%")})
	if err != nil {
		t.Fatal(err)
	}
	repeated, err := compare.Compare(
		cacheSide("runs/before", 6, 500, 0, 40<<20, "go1.26.0", nil, 1),
		cacheSide("runs/after", 6, 310, 0, 40<<20, "go1.26.0", nil, 2),
		compare.Options{Gates: gates(t, "bytes_per_request>+5%", "Process:bytes_per_request<-10%", "heap_inuse_bytes>+1%")})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*compare.Comparison{"single": single, "repeated": repeated}
}

func TestComparison_golden(t *testing.T) {
	for name, c := range comparisons(t) {
		for _, f := range []struct {
			ext    string
			format Format
		}{
			{"text", FormatText}, {"md", FormatMarkdown}, {"json", FormatJSON}, {"html", FormatHTML},
		} {
			t.Run(name+"."+f.ext, func(t *testing.T) {
				var b bytes.Buffer
				if err := Write(&b, f.format, Comparison{Comparison: c}); err != nil {
					t.Fatal(err)
				}
				goldenfile.Check(t, filepath.Join("testdata", "compare-"+name+"."+f.ext), b.Bytes())
			})
		}
	}
}

func TestComparison_marksOnlySignificantChanges(t *testing.T) {
	c := comparisons(t)["repeated"]
	var text, md, page bytes.Buffer
	if err := Write(&text, FormatText, Comparison{Comparison: c}); err != nil {
		t.Fatal(err)
	}
	if err := Write(&md, FormatMarkdown, Comparison{Comparison: c}); err != nil {
		t.Fatal(err)
	}
	if err := Write(&page, FormatHTML, Comparison{Comparison: c}); err != nil {
		t.Fatal(err)
	}
	for _, f := range c.Figures {
		if !f.Compared() {
			continue
		}
		line := lineWith(t, text.String(), "\n"+f.Label+" ")
		if got, want := strings.Contains(line, "* (p="), f.Significant(); got != want {
			t.Errorf("text marks %s significant: %v, want %v: %q", f.Name, got, want, line)
		}
		mdLine := lineWith(t, md.String(), "| "+f.Label+" |")
		if got, want := strings.Contains(mdLine, "**"), f.Significant(); got != want {
			t.Errorf("markdown bolds %s: %v, want %v: %q", f.Name, got, want, mdLine)
		}
		row := lineWith(t, page.String(), `data-figure="`+f.Name+`"`)
		if got, want := strings.Contains(row, `class="better"`) || strings.Contains(row, `class="worse"`), f.Significant(); got != want {
			t.Errorf("html colours %s: %v, want %v", f.Name, got, want)
		}
	}
	if !strings.Contains(text.String(), "`cache.(*Worker).Process` allocates 38 % fewer bytes per request at cache/worker.go:31: 497 B → 306 B (p < 0.01, n = 6+6)") {
		t.Errorf("text lacks the Process sentence:\n%s", text.String())
	}
}

// TestComparison_markdownLeavesEmptyCellsEmpty: a significant site that
// had no bytes before has no relative change; its cell stays empty rather
// than an empty bold "****".
func TestComparison_markdownLeavesEmptyCellsEmpty(t *testing.T) {
	c := *comparisons(t)["repeated"]
	sites := slices.Clone(c.Shrank)
	for i := range sites {
		if sites[i].Significant() {
			sites[i].BytesRelative = nil
			sites = sites[i : i+1]
			break
		}
	}
	if len(sites) != 1 || !sites[0].Significant() {
		t.Fatalf("no significant site in %+v", c.Shrank)
	}
	c.Shrank = sites
	var md bytes.Buffer
	if err := Write(&md, FormatMarkdown, Comparison{Comparison: &c}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "****") {
		t.Errorf("markdown has an empty bold cell:\n%s", md.String())
	}
}

// TestComparison_oneRunASideTellsOnlySampledChanges: with one run a side
// no test says what is noise, and a site whose change stands on a sample
// or two gets no sentence; the tables still list it.
func TestComparison_oneRunASideTellsOnlySampledChanges(t *testing.T) {
	c := *comparisons(t)["single"]
	if c.Tested {
		t.Fatal("the single comparison is tested")
	}
	var told bytes.Buffer
	if err := Write(&told, FormatText, Comparison{Comparison: &c}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(told.String(), "one run per side, not tested") {
		t.Fatalf("the single comparison tells no change to begin with:\n%s", told.String())
	}
	thin := func(sites []compare.SiteChange) []compare.SiteChange {
		sites = slices.Clone(sites)
		for i := range sites {
			sites[i].SamplesBefore, sites[i].SamplesAfter = 1, 2
		}
		return sites
	}
	c.Grew, c.Shrank = thin(c.Grew), thin(c.Shrank)
	var text bytes.Buffer
	if err := Write(&text, FormatText, Comparison{Comparison: &c}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "one run per side, not tested") {
		t.Errorf("changes of a sample or two told as findings:\n%s", text.String())
	}
	// Nor in the tables of sites: "100 % fewer" from a sample or two a
	// side is not a change; they are counted as within noise.
	if strings.Contains(text.String(), "Allocation sites that") || !strings.Contains(text.String(), "changed within noise (fewer than 4 heap profile samples apart") {
		t.Errorf("sites of a sample or two listed as changes, or not counted as noise:\n%s", text.String())
	}
}

func lineWith(t *testing.T, s, marker string) string {
	t.Helper()
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(marker, "\n") && strings.HasPrefix(strings.TrimSpace(l), marker[1:]) || strings.Contains(l, marker) {
			return l
		}
	}
	t.Fatalf("no line with %q in\n%s", marker, s)
	return ""
}

func TestComparison_JSONStableNames(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, FormatJSON, Comparison{Comparison: comparisons(t)["single"]}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Figures []struct {
			Name string `json:"name"`
		} `json:"figures"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range got.Figures {
		names = append(names, f.Name)
	}
	want := "heap_inuse_bytes allocated_bytes_per_second sys_bytes rss_bytes gc_cycles_per_second gc_pause_p99_seconds gc_pause_max_seconds gc_cpu_fraction bytes_per_request objects_per_request throughput_per_second latency_p50_seconds latency_p99_seconds"
	if strings.Join(names, " ") != want {
		t.Errorf("figure names %v", names)
	}
}

func TestComparison_HTMLEmbedsTheDifferentialFlameGraph(t *testing.T) {
	before := cacheSide("a", 2, 1200, 0, 1<<20, "", nil, 1)
	after := cacheSide("b", 2, 64, 48, 1<<20, "", nil, 2)
	c, err := compare.Compare(before, after, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	widget, err := compare.Flame(before, after, c)
	if err != nil || widget == nil || len(widget.Views) != 2 || widget.Title != "allocations per request" {
		t.Fatalf("flame graph %+v, err %v: want two views of allocations per request", widget, err)
	}
	views := widget.Views
	// Per request: Process's frame holds its median-ish bytes per request
	// on each side.
	tree := views[0].Tree
	for n := range tree.Nodes {
		if tree.Name(n) == processFn {
			if b, a := tree.Before(n, tree.Default), tree.After(n, tree.Default); b < 1100 || b > 1300 || a < 60 || a > 70 {
				t.Errorf("Process per request in the flame graph: %v → %v, want ~1200 → ~64", b, a)
			}
		}
	}
	var page bytes.Buffer
	if err := Write(&page, FormatHTML, Comparison{Comparison: c, Flame: &flame.HTMLWidget{ID: "diff", Views: views}}); err != nil {
		t.Fatal(err)
	}
	s := page.String()
	for _, want := range []string{`<div class="hsflame" id="diff">`, `"name":"changes"`, `"name":"vanished"`, `<table id="figures">`} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	for _, external := range []string{"http://", "https://", "src=\"//"} {
		if strings.Contains(strings.ReplaceAll(s, "http://127.0.0.1:8080", ""), external) {
			t.Errorf("page refers to %s", external)
		}
	}
}
