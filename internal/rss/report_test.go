package rss_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/goldenfile"
	"github.com/heapscope/heapscope/internal/report"
	"github.com/heapscope/heapscope/internal/rss"
	"github.com/heapscope/heapscope/internal/sysmem"
)

const mib = 1 << 20

// process classifies a made-up Go process: one heap arena with heapRSS of
// 32 MiB mapped resident, and anonRSS resident in a mapping outside it.
func process(heapRSS, anonRSS uint64) rss.Classification {
	const base = 0xc000000000
	maps := []sysmem.Mapping{
		{Start: 0x400000, End: 0x800000, Perms: sysmem.PermRead | sysmem.PermExec, Inode: 7, Path: "/srv/app", Rss: 3 * mib, Pss: 3 * mib},
		{Start: base, End: base + 32*mib, Perms: sysmem.PermRead | sysmem.PermWrite, Rss: heapRSS, PrivateDirty: heapRSS},
		{Start: base + 32*mib, End: base + 64*mib},
		{Start: 0x7f0000000000, End: 0x7f0000000000 + 64*mib + 4096, Perms: sysmem.PermRead | sysmem.PermWrite, Rss: anonRSS},
		{Start: 0x7ffd00000000, End: 0x7ffd00021000, Perms: sysmem.PermRead | sysmem.PermWrite, Path: "[stack]", Rss: 16 << 10},
	}
	var c rss.Classifier
	for i := range maps {
		c.Add(&maps[i])
	}
	return c.Result()
}

func TestBuild_gap(t *testing.T) {
	tests := []struct {
		name             string
		heapRSS, anonRSS uint64
		ms               *gcstats.MemStats
		want             []string // explanation ids, in order
		wantBytes        uint64   // of the first
	}{
		{
			name: "no runtime figures", heapRSS: 20 * mib, anonRSS: 2 * mib,
			want: []string{"heap-resident", "runtime-off-heap", "files"}, wantBytes: 20 * mib,
		},
		{
			name: "heap matches", heapRSS: 20 * mib, anonRSS: 2 * mib,
			ms:   &gcstats.MemStats{HeapSys: 30 * mib, HeapReleased: 10 * mib, StackInuse: 512 << 10, Sys: 40 * mib},
			want: []string{"heap-matches", "runtime-off-heap", "files"}, wantBytes: 20 * mib,
		},
		{
			name: "committed but untouched", heapRSS: 8 * mib, anonRSS: 2 * mib,
			ms:   &gcstats.MemStats{HeapSys: 30 * mib, HeapReleased: 2 * mib, Sys: 40 * mib},
			want: []string{"heap-untouched", "runtime-off-heap", "files"}, wantBytes: 20 * mib,
		},
		{
			name: "released but resident", heapRSS: 30 * mib, anonRSS: 2 * mib,
			ms:   &gcstats.MemStats{HeapSys: 30 * mib, HeapReleased: 20 * mib, Sys: 40 * mib},
			want: []string{"heap-released-resident", "runtime-off-heap", "files"}, wantBytes: 20 * mib,
		},
		{
			name: "memory the runtime does not know", heapRSS: 20 * mib, anonRSS: 60 * mib,
			ms:   &gcstats.MemStats{HeapSys: 30 * mib, HeapReleased: 10 * mib, Sys: 36 * mib},
			want: []string{"heap-matches", "unknown-anon", "files"}, wantBytes: 20 * mib,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rss.Build(rss.Input{PID: 1, Mappings: process(tt.heapRSS, tt.anonRSS), MemStats: tt.ms})
			var ids []string
			for _, e := range r.Gap {
				ids = append(ids, e.ID)
				if e.Text == "" {
					t.Errorf("%s: no text", e.ID)
				}
			}
			if strings.Join(ids, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("explanations %v, want %v", ids, tt.want)
			}
			if r.Gap[0].Bytes != tt.wantBytes {
				t.Errorf("%s: %d bytes, want %d", r.Gap[0].ID, r.Gap[0].Bytes, tt.wantBytes)
			}
			if r.GoHeap.SizeBytes != 32*mib || r.GoHeap.RSSBytes != tt.heapRSS || r.GoHeap.Arenas != 1 {
				t.Errorf("go heap %+v", r.GoHeap)
			}
			if tt.name == "memory the runtime does not know" {
				// 60 MiB + 16 KiB of stack outside, 6 MiB known off heap.
				if got, want := r.Gap[1].Bytes, uint64(60*mib+16<<10-6*mib); got != want {
					t.Errorf("unknown anon %d bytes, want %d", got, want)
				}
			}
		})
	}
}

func TestBuild_cgroup(t *testing.T) {
	tests := []struct {
		name                         string
		cg                           sysmem.Cgroup
		wantAnon, wantFile, headroom uint64
	}{
		{name: "v2", cg: sysmem.Cgroup{Version: 2, Limit: 512 * mib, Usage: 300 * mib, Stat: map[string]uint64{"anon": 200 * mib, "file": 90 * mib}},
			wantAnon: 200 * mib, wantFile: 90 * mib, headroom: 212 * mib},
		{name: "v1 hierarchical totals", cg: sysmem.Cgroup{Version: 1, Limit: 512 * mib, Usage: 300 * mib, Stat: map[string]uint64{"rss": 1, "cache": 2, "total_rss": 200 * mib, "total_cache": 90 * mib}},
			wantAnon: 200 * mib, wantFile: 90 * mib, headroom: 212 * mib},
		{name: "unlimited", cg: sysmem.Cgroup{Version: 2, Unlimited: true, Usage: 300 * mib, Stat: map[string]uint64{"anon": 5}},
			wantAnon: 5},
		{name: "usage above limit", cg: sysmem.Cgroup{Version: 1, Limit: 100 * mib, Usage: 101 * mib}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rss.Build(rss.Input{Mappings: process(mib, mib), Cgroup: &tt.cg})
			c := r.Cgroup
			if c.AnonBytes != tt.wantAnon || c.FileBytes != tt.wantFile || c.HeadroomBytes != tt.headroom {
				t.Errorf("anon %d file %d headroom %d, want %d %d %d", c.AnonBytes, c.FileBytes, c.HeadroomBytes, tt.wantAnon, tt.wantFile, tt.headroom)
			}
		})
	}
}

// TestReport_golden renders the report of the recorded leaky cache
// process, with and without the runtime's figures.
func TestReport_golden(t *testing.T) {
	for _, tt := range []struct {
		name     string
		memstats bool
		format   report.Format
	}{
		{"leakycache.txt", true, report.FormatText},
		{"leakycache.json", true, report.FormatJSON},
		{"leakycache-kernel-only.txt", false, report.FormatText},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := leakyInput(t, tt.memstats)
			if tt.memstats {
				in.MemStatsURL, in.MemStatsDiscovered = "http://127.0.0.1:6060/debug/pprof/", true
			} else {
				in.RuntimeUnknown = "none of the process's listening ports (8080) serves http://127.0.0.1:PORT/debug/pprof/; give --target URL, the process's pprof"
			}
			in.Cgroup = &sysmem.Cgroup{Version: 2, Path: "/system.slice/leaky.service", Limit: 256 * mib, Usage: 40 * mib,
				Stat: map[string]uint64{"anon": 12 * mib, "file": 26 * mib}}
			r := rss.Build(in)
			var buf bytes.Buffer
			if err := report.Write(&buf, tt.format, report.RSS{Report: &r}); err != nil {
				t.Fatal(err)
			}
			goldenfile.Check(t, filepath.Join("testdata", "golden", tt.name), buf.Bytes())
		})
	}
}
