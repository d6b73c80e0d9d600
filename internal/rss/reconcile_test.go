package rss_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/rss"
)

func TestAgree(t *testing.T) {
	tests := []struct {
		name string
		a, b uint64
		want bool
	}{
		{"equal", 20 * mib, 20 * mib, true},
		{"zero and the absolute tolerance", 0, rss.ToleranceBytes, true},
		{"zero and just past it", 0, rss.ToleranceBytes + 1, false},
		{"small figures 5 MiB apart", 1 * mib, 6 * mib, false},
		{"10 % of the larger", 100 * mib, 90 * mib, true},
		{"past 10 % of the larger", 100 * mib, 89 * mib, false},
		{"order does not matter", 89 * mib, 100 * mib, false},
		{"large figures", 4 << 30, 4<<30 - 400*mib, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rss.Agree(tt.a, tt.b); got != tt.want {
				t.Errorf("Agree(%d, %d) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestReconcile(t *testing.T) {
	// A process with a 64 MiB heap mapping, 2 MiB of anonymous memory
	// outside it and 10 MiB of files.
	kernel := func(heapRSS uint64) rss.Kernel {
		return rss.Kernel{RSSBytes: heapRSS + 12*mib, ByMapping: true, HeapMappings: 1, HeapSizeBytes: 64 * mib,
			HeapRSSBytes: heapRSS, AnonRSSBytes: 2 * mib, FileRSSBytes: 10 * mib, FilePSSBytes: 4 * mib}
	}
	// 40 MiB held in the arenas, 6 MiB mapped outside them.
	steady := rss.Accounting{HeapSys: 60 * mib, HeapReleased: 21 * mib, StackInuse: mib, Sys: 67 * mib,
		HeapInuse: 36 * mib, HeapAlloc: 35 * mib, HeapIdle: 24 * mib}
	tests := []struct {
		name      string
		k         rss.Kernel
		a         *rss.Accounting
		want      []string // item ids, in order
		wantBytes []uint64 // of each item
		gap       int64
	}{
		{
			name: "heap matches", k: kernel(38 * mib), a: &steady,
			want: []string{"heap-matches", "runtime-off-heap", "files"}, wantBytes: []uint64{38 * mib, 2 * mib, 10 * mib}, gap: -2 * mib,
		},
		{
			name: "committed but untouched", k: kernel(20 * mib), a: &steady,
			want: []string{"heap-untouched", "runtime-off-heap", "files"}, wantBytes: []uint64{20 * mib, 2 * mib, 10 * mib}, gap: -20 * mib,
		},
		{
			name: "released but resident", k: kernel(50 * mib), a: &steady,
			want: []string{"heap-released-resident", "runtime-off-heap", "files"}, wantBytes: []uint64{10 * mib, 2 * mib, 10 * mib}, gap: 10 * mib,
		},
		{
			name: "memory the runtime does not know",
			k: func() rss.Kernel {
				k := kernel(40 * mib)
				k.AnonRSSBytes = 30 * mib
				return k
			}(),
			a:    &steady,
			want: []string{"heap-matches", "unknown-anon", "files"}, wantBytes: []uint64{40 * mib, 24 * mib, 10 * mib},
		},
		{
			name: "idle heap and fragmentation",
			k:    kernel(40 * mib),
			a: &rss.Accounting{HeapSys: 60 * mib, HeapReleased: 21 * mib, StackInuse: mib, Sys: 67 * mib,
				HeapInuse: 25 * mib, HeapAlloc: 15 * mib, HeapIdle: 35 * mib},
			want: []string{"heap-matches", "heap-idle", "heap-fragmented", "runtime-off-heap", "files"}, wantBytes: []uint64{40 * mib, 14 * mib, 10 * mib, 2 * mib, 10 * mib},
		},
		{
			name: "runtime unknown", k: kernel(38 * mib),
			want: []string{"heap-resident", "runtime-off-heap", "files"}, wantBytes: []uint64{38 * mib, 2 * mib, 10 * mib},
		},
		{
			name: "no Go heap", k: rss.Kernel{RSSBytes: 20 * mib, ByMapping: true, AnonRSSBytes: 20 * mib}, a: &steady,
			want: []string{"heap-resident", "unknown-anon"}, wantBytes: []uint64{0, 14 * mib},
		},
		{
			name: "RSS alone below committed", k: rss.Kernel{RSSBytes: 30 * mib}, a: &steady,
			want: []string{"total-below-committed"}, wantBytes: []uint64{16 * mib},
		},
		{
			name: "RSS alone above committed", k: rss.Kernel{RSSBytes: 80 * mib}, a: &steady,
			want: []string{"total-above-committed"}, wantBytes: []uint64{34 * mib},
		},
		{
			name: "RSS alone matches", k: rss.Kernel{RSSBytes: 48 * mib}, a: &steady,
			want: []string{"total-matches"}, wantBytes: []uint64{48 * mib},
		},
		{name: "RSS alone, runtime unknown", k: rss.Kernel{RSSBytes: 48 * mib}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rss.Reconcile(tt.k, tt.a)
			var ids []string
			var bytes []uint64
			for _, e := range r.Items {
				ids = append(ids, e.ID)
				bytes = append(bytes, e.Bytes)
				if e.Text == "" {
					t.Errorf("%s: no text", e.ID)
				}
			}
			if strings.Join(ids, ",") != strings.Join(tt.want, ",") || fmt.Sprint(bytes) != fmt.Sprint(tt.wantBytes) && len(tt.want) > 0 {
				t.Fatalf("items %v of %v bytes, want %v of %v", ids, bytes, tt.want, tt.wantBytes)
			}
			if want := strings.Join(tt.want, ","); r.Cause() != strings.Split(want, ",")[0] {
				t.Errorf("Cause() = %q, want the first item", r.Cause())
			}
			if tt.a == nil {
				if r.CommittedBytes != 0 || r.ArenaCommittedBytes != 0 {
					t.Errorf("committed %d, arenas %d without the runtime's figures", r.CommittedBytes, r.ArenaCommittedBytes)
				}
				return
			}
			a := tt.a
			if r.CommittedBytes != a.Sys-a.HeapReleased || r.ArenaCommittedBytes != a.HeapSys-a.HeapReleased+a.StackInuse || r.OffArenaBytes != a.Sys-a.HeapSys-a.StackInuse {
				t.Errorf("committed %d, arenas %d, outside %d: not Sys − HeapReleased, HeapSys − HeapReleased + StackInuse, Sys − HeapSys − StackInuse", r.CommittedBytes, r.ArenaCommittedBytes, r.OffArenaBytes)
			}
			if r.CommittedBytes != r.ArenaCommittedBytes+r.OffArenaBytes {
				t.Errorf("committed %d is not the arenas' %d and the rest %d", r.CommittedBytes, r.ArenaCommittedBytes, r.OffArenaBytes)
			}
			if tt.k.ByMapping && tt.gap != 0 && r.HeapGapBytes != tt.gap {
				t.Errorf("heap gap %d, want %d", r.HeapGapBytes, tt.gap)
			}
		})
	}
}

func TestReconcile_swappedHeap(t *testing.T) {
	k := rss.Kernel{ByMapping: true, HeapMappings: 1, HeapSizeBytes: 64 * mib, HeapRSSBytes: 10 * mib, HeapSwapBytes: 20 * mib}
	r := rss.Reconcile(k, &rss.Accounting{HeapSys: 40 * mib, Sys: 44 * mib})
	if r.Cause() != "heap-untouched" || !strings.Contains(r.Items[0].Text, "swapped out (20.0 MiB of the arenas is in swap)") {
		t.Errorf("items %+v, want untouched or swapped out", r.Items)
	}
}

// A Go process read by heapscope rss: the heap arenas' Rss against what
// the runtime holds there, the anonymous memory outside them against what
// the runtime maps outside, and the files, which MemStats never count.
func ExampleReconcile() {
	const mib = 1 << 20
	kernel := rss.Kernel{
		RSSBytes: 60 * mib, ByMapping: true,
		HeapMappings: 1, HeapSizeBytes: 64 * mib, HeapRSSBytes: 20 * mib,
		AnonRSSBytes: 30 * mib, FileRSSBytes: 10 * mib,
	}
	runtime := rss.Accounting{HeapSys: 60 * mib, HeapReleased: 20 * mib, HeapInuse: 38 * mib, HeapAlloc: 36 * mib, HeapIdle: 22 * mib, StackInuse: mib, Sys: 66 * mib}
	r := rss.Reconcile(kernel, &runtime)
	fmt.Println("committed:", r.CommittedBytes/mib, "MiB, in the arenas:", r.ArenaCommittedBytes/mib, "MiB")
	for _, e := range r.Items {
		fmt.Println(e.ID, e.Bytes/mib)
	}
	// Output:
	// committed: 46 MiB, in the arenas: 41 MiB
	// heap-untouched 21
	// unknown-anon 25
	// files 10
}
