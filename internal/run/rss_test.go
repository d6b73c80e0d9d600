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
		if got.Kind != w.name || got.Count != w.count || got.RSSBytes != u.RSSBytes || got.SizeBytes != u.SizeBytes || got.SwapBytes != u.SwapBytes {
			t.Errorf("kind %d: %+v, want %s with %d mappings and rss's sums %+v", i, got, w.name, w.count, u)
		}
	}

	hm := cl.Heap(0)
	run := &result.Run{RSS: result.RSS{Source: "proc", RSSBytes: cl.Total.RSSBytes, Mappings: kinds,
		GoHeapMappings: &result.HeapMappings{Count: hm.Count, SizeBytes: hm.Size, RSSBytes: hm.Rss, CommittedBytes: hm.Rss}}}
	rep := diagnose.Run(diagnose.Input{Run: run, MemStats: &gcstats.MemStats{OtherSys: 1 << 20}})
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
		if f.Evidence["reconciled_unknown_anon_bytes"] != max(anon-(1<<20), 0) {
			t.Errorf("unknown anonymous memory %.0f, want anon-other's rss less the runtime's off-heap 1 MiB", f.Evidence["reconciled_unknown_anon_bytes"])
		}
		if strings.Contains(f.Title, "reserved") || !strings.Contains(f.Title, "go-heap") {
			t.Errorf("title %q: want the resident kinds only", f.Title)
		}
	}
	if !found {
		t.Errorf("no rss.breakdown finding: %+v", rep.Findings)
	}
}
