package run

import (
	"os"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/diagnose"
	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/result"
	"github.com/heapscope/heapscope/internal/rss"
	"github.com/heapscope/heapscope/internal/sysmem"
)

// TestMappingKinds checks what a run records in rss.mappings from a
// recorded smaps file, and that diagnose's RSS check reads it.
func TestMappingKinds(t *testing.T) {
	f, err := os.Open("../sysmem/testdata/smaps/service.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := rss.Classifier{}
	if err := sysmem.ScanSmaps(f, c.Add); err != nil {
		t.Fatal(err)
	}
	cl := c.Result()
	kinds := mappingKinds(&cl)

	// kvservice ×3; its bss; a heap arena (---p rw-p ---p); a C arena;
	// /dev/shm; [vvar]; [stack]; [vsyscall]. No library: the kind is
	// left out.
	want := []struct {
		name  string
		kind  rss.Kind
		count int
	}{
		{result.MappingGoHeap, rss.KindGoHeap, 1},
		{result.MappingStack, rss.KindStack, 1},
		{result.MappingAnon, rss.KindAnon, 4},
		{result.MappingReserved, rss.KindReserved, 2},
		{result.MappingBinary, rss.KindBinary, 3},
		{result.MappingFiles, rss.KindFile, 1},
	}
	if len(kinds) != len(want) {
		t.Fatalf("kinds %+v, want %d", kinds, len(want))
	}
	for i, w := range want {
		got, u := kinds[i], cl.Kind(w.kind)
		if got.Kind != w.name || got.Count != w.count || got.RSSBytes != u.RSSBytes || got.PSSBytes != u.PSSBytes || got.SizeBytes != u.SizeBytes || got.SwapBytes != u.SwapBytes {
			t.Errorf("kind %d: %+v, want %s with %d mappings and rss's sums %+v", i, got, w.name, w.count, u)
		}
	}

	// The runtime's figures of the same moment: 100 MiB of heap, 1 MiB
	// mapped outside it.
	ms := &gcstats.MemStats{HeapSys: 100 << 20, HeapInuse: 90 << 20, HeapIdle: 10 << 20, Alloc: 80 << 20, HeapAlloc: 80 << 20,
		OtherSys: 1 << 20, Sys: 101 << 20}
	hm := cl.Heap(ms.HeapSys)
	run := &result.Run{
		RSS: result.RSS{Source: "proc", RSSBytes: cl.Total.RSSBytes, Mappings: kinds,
			GoHeapMappings: &result.HeapMappings{Count: hm.Count, SizeBytes: hm.Size, RSSBytes: hm.Rss, CommittedBytes: hm.Rss}},
		MemStats: result.MemStats{SysBytes: ms.Sys, HeapSysBytes: ms.HeapSys, HeapInuseBytes: ms.HeapInuse, HeapIdleBytes: ms.HeapIdle, AllocBytes: ms.Alloc},
	}
	// heapscope rss's reconciliation of the same process.
	gap := rss.Build(rss.Input{Mappings: cl, MemStats: ms}).Gap
	for _, in := range []diagnose.Input{{Run: run, MemStats: ms}, {Run: run}} {
		rep := diagnose.Run(in)
		var found bool
		for _, f := range rep.Findings {
			if f.ID != "rss.breakdown" {
				continue
			}
			found = true
			anon := float64(cl.Kind(rss.KindAnon).RSSBytes)
			if f.Evidence["kernel_anon_other_rss_bytes"] != anon || f.Evidence["kernel_go_heap_rss_bytes"] != float64(hm.Rss) {
				t.Errorf("evidence %v, want anon-other %.0f and go-heap %d from the classification", f.Evidence, anon, hm.Rss)
			}
			// The same items as heapscope rss, with the same bytes and
			// words, whether the run kept the whole MemStats or not.
			items := 0
			for k := range f.Evidence {
				if strings.HasPrefix(k, "reconciled_") && k != "reconciled_heap_gap_bytes" {
					items++
				}
			}
			if items != len(gap) {
				t.Errorf("evidence %v has %d reconciled items, heapscope rss has %+v", f.Evidence, items, gap)
			}
			for _, e := range gap {
				key := "reconciled_" + strings.ReplaceAll(e.ID, "-", "_") + "_bytes"
				if got, ok := f.Evidence[key]; !ok || got != float64(e.Bytes) {
					t.Errorf("evidence %s = %.0f (present %v), want heapscope rss's %d", key, got, ok, e.Bytes)
				}
				if !strings.Contains(f.Fix, e.Text) {
					t.Errorf("explanation %q lacks heapscope rss's %q", f.Fix, e.Text)
				}
			}
			if got, want := f.Evidence["reconciled_heap_gap_bytes"], float64(hm.Rss)-float64(ms.HeapSys); got != want {
				t.Errorf("heap gap %.0f, want the arenas' rss less HeapSys − HeapReleased + StackInuse, %.0f", got, want)
			}
			if strings.Contains(f.Title, "reserved") || !strings.Contains(f.Title, "go-heap") {
				t.Errorf("title %q: want the resident kinds only", f.Title)
			}
		}
		if !found {
			t.Errorf("no rss.breakdown finding: %+v", rep.Findings)
		}
	}
}
