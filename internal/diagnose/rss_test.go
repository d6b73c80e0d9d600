package diagnose

import (
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/result"
)

// rssRun is a run of a process with heapRSS resident in its heap arenas
// and anonRSS in other anonymous memory, whose runtime committed 200 MiB
// of heap (idle of it idle, not released) and maps 8 MiB outside it.
func rssRun(heapRSS, anonRSS, idle uint64) *result.Run {
	const mib = 1 << 20
	return &result.Run{
		RSS: result.RSS{Source: "proc", RSSBytes: heapRSS + anonRSS + 10*mib, Mappings: []result.MappingKind{
			{Kind: result.MappingGoHeap, Count: 1, SizeBytes: 256 * mib, RSSBytes: heapRSS},
			{Kind: result.MappingAnon, Count: 4, SizeBytes: 512 * mib, RSSBytes: anonRSS},
			{Kind: result.MappingBinary, Count: 3, SizeBytes: 12 * mib, RSSBytes: 10 * mib, PSSBytes: 10 * mib},
		}},
		MemStats: result.MemStats{
			SysBytes: 208 * mib, HeapSysBytes: 200 * mib, HeapIdleBytes: idle, HeapInuseBytes: 200*mib - idle,
			AllocBytes: 200*mib - idle - mib,
		},
	}
}

func TestRun_rssBreakdown(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name     string
		run      *result.Run
		severity string
		items    []string // the reconciliation's items, in evidence
	}{
		{"heap matches, nothing unknown", rssRun(190*mib, 6*mib, 0), "info", []string{"heap_matches", "runtime_off_heap", "files"}},
		{"committed but untouched", rssRun(100*mib, 6*mib, 0), "info", []string{"heap_untouched", "runtime_off_heap", "files"}},
		{"memory the runtime does not know", rssRun(190*mib, 108*mib, 0), "low", []string{"heap_matches", "unknown_anon", "files"}},
		{"twice the gap is medium", rssRun(190*mib, 300*mib, 0), "medium", []string{"heap_matches", "unknown_anon", "files"}},
		{"idle heap not returned", rssRun(200*mib, 6*mib, 80*mib), "low", []string{"heap_matches", "heap_idle", "runtime_off_heap", "files"}},
		{"RSS from metrics", func() *result.Run {
			r := rssRun(0, 0, 0)
			r.RSS = result.RSS{Source: "metrics", RSSBytes: 300 * mib}
			return r
		}(), "info", []string{"total_above_committed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := findingsWith(Run(Input{Run: tt.run}).Findings, "rss.breakdown")
			if len(fs) != 1 {
				t.Fatalf("rss.breakdown findings %+v, want one", fs)
			}
			f := fs[0]
			if f.Severity != tt.severity {
				t.Errorf("severity %s, want %s: %s", f.Severity, tt.severity, f.Fix)
			}
			var items []string
			for _, id := range tt.items {
				if _, ok := f.Evidence["reconciled_"+id+"_bytes"]; !ok {
					t.Errorf("no reconciled_%s_bytes in %v", id, f.Evidence)
				}
			}
			for k := range f.Evidence {
				if strings.HasPrefix(k, "reconciled_") && k != "reconciled_heap_gap_bytes" {
					items = append(items, k)
				}
			}
			if len(items) != len(tt.items) {
				t.Errorf("reconciled items %v, want %v", items, tt.items)
			}
			if got := f.Evidence["runtime_committed_bytes"]; got != 208*mib {
				t.Errorf("committed %.0f, want Sys − HeapReleased", got)
			}
			if got := f.Evidence["runtime_arena_committed_bytes"]; got != 200*mib {
				t.Errorf("committed in the arenas %.0f, want HeapSys − HeapReleased + StackInuse", got)
			}
		})
	}
}
