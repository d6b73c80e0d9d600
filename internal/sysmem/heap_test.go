package sysmem

import (
	"bytes"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// Shorthands for building mappings.
const (
	mib  = 1 << 20
	rw   = PermRead | PermWrite
	none = Perms(0)
	goRW = FlagRead | FlagWrite | FlagMayRead | FlagMayWrite | FlagMayExec | FlagAccount
	goNo = FlagMayRead | FlagMayWrite | FlagMayExec
)

// anon returns an anonymous private mapping of [start, end) with rss
// resident bytes.
func anon(start, end uint64, perms Perms, flags VMFlags, rss uint64) Mapping {
	return Mapping{Start: start, End: end, Perms: perms, Size: end - start, Rss: rss, PrivateDirty: rss, Anonymous: rss, Flags: flags}
}

func TestGoHeap(t *testing.T) {
	const (
		base = 0x3ee6a4000000 // a random, arena-aligned heap base
		race = 0xc000000000   // the fixed base of race-enabled builds
	)
	lib := Mapping{Start: 0x7f0000000000, End: 0x7f0000200000, Perms: PermRead | PermExec, Inode: 77, Path: "/usr/lib/libc.so.6", Size: 2 * mib, Rss: mib}
	tests := []struct {
		name    string
		maps    []Mapping
		heapSys uint64
		want    HeapMappings // Mappings not compared; Count says how many
		note    string       // a substring of Note, "" for no note
	}{
		{
			name: "Go 1.26 randomised base inside the first arena",
			maps: []Mapping{
				lib,
				anon(base, base+20*mib, none, goNo, 0),
				anon(base+20*mib, base+124*mib, rw, goRW, 96*mib),
				anon(base+124*mib, base+128*mib, none, goNo, 0),
			},
			heapSys: 103 * mib,
			want:    HeapMappings{Count: 1, Size: 104 * mib, Rss: 96 * mib, PrivateDirty: 96 * mib, Reserved: 128 * mib, Arenas: 2, HeapSys: 103 * mib, Consistent: true, Confidence: 0.9},
		},
		{
			name: "race build at 0xc000000000 with shadow memory left out",
			maps: []Mapping{
				anon(race, race+104*mib, rw, goRW, 100*mib),
				anon(race+104*mib, race+128*mib, none, goNo, 0),
				// The race detector's shadow: aligned, read-write, "nr".
				anon(0x218000000000, 0x218010000000, rw, goRW|FlagNoReserve|FlagNoHugePage, 200*mib),
				anon(0x306000000000, 0x306004000000, rw, goRW|FlagNoReserve|FlagNoHugePage, 50*mib),
			},
			heapSys: 103 * mib,
			want:    HeapMappings{Count: 1, Size: 104 * mib, Rss: 100 * mib, PrivateDirty: 100 * mib, Reserved: 128 * mib, Arenas: 2, HeapSys: 103 * mib, Consistent: true, Confidence: 0.9},
		},
		{
			name: "C allocator arenas are left out",
			maps: []Mapping{
				anon(base, base+4*mib, rw, goRW, 3*mib),
				anon(base+4*mib, base+64*mib, none, goNo, 0),
				anon(0x7fdfdc000000, 0x7fdfdc021000, rw, goRW|FlagNoReserve, 132<<10),
				anon(0x7fdfdc021000, 0x7fdfe0000000, none, goNo|FlagNoReserve, 0),
			},
			heapSys: 4 * mib,
			want:    HeapMappings{Count: 1, Size: 4 * mib, Rss: 3 * mib, PrivateDirty: 3 * mib, Reserved: 64 * mib, Arenas: 1, HeapSys: 4 * mib, Consistent: true, Confidence: 0.9},
		},
		{
			name: "split by madvise and arenas merged",
			maps: []Mapping{
				anon(base+32*mib, base+36*mib, none, goNo, 0), // not part of a run starting on an arena
				anon(base+64*mib, base+100*mib, rw, goRW, 30*mib),
				anon(base+100*mib, base+140*mib, rw, goRW|FlagNoHugePage, 10*mib),
				anon(base+140*mib, base+192*mib, none, goNo, 0),
			},
			heapSys: 76 * mib,
			want:    HeapMappings{Count: 2, Size: 76 * mib, Rss: 40 * mib, PrivateDirty: 40 * mib, Reserved: 128 * mib, Arenas: 2, HeapSys: 76 * mib, Consistent: true, Confidence: 0.9},
		},
		{
			name: "two heap regions far apart",
			maps: []Mapping{
				anon(race, race+64*mib, rw, goRW, 60*mib),
				anon(base, base+8*mib, none, goNo, 0),
				anon(base+8*mib, base+16*mib, rw, goRW, 8*mib),
				anon(base+16*mib, base+64*mib, none, goNo, 0),
			},
			heapSys: 70 * mib,
			want:    HeapMappings{Count: 2, Size: 72 * mib, Rss: 68 * mib, PrivateDirty: 68 * mib, Reserved: 128 * mib, Arenas: 2, HeapSys: 70 * mib, Consistent: true, Confidence: 0.9},
		},
		{
			name: "run not ending on an arena boundary",
			maps: []Mapping{
				anon(base, base+8*mib, rw, goRW, 8*mib),
				anon(base+8*mib, base+60*mib, none, goNo, 0),
			},
			heapSys: 8 * mib,
			want:    HeapMappings{HeapSys: 8 * mib},
			note:    "no anonymous rw-p mappings",
		},
		{
			name: "adjacent unaligned mapping spoils the run",
			maps: []Mapping{
				anon(base-4096, base, rw, goRW, 4096),
				anon(base, base+64*mib, rw, goRW, 8*mib),
			},
			want: HeapMappings{},
			note: "no anonymous rw-p mappings",
		},
		{
			name: "file mappings and pseudo-paths are not heap",
			maps: []Mapping{
				{Start: base, End: base + 64*mib, Perms: rw, Inode: 9, Path: "/dev/zero", Size: 64 * mib},
				{Start: base + 64*mib, End: base + 128*mib, Perms: rw, Path: "[anon:shared]", Size: 64 * mib},
				{Start: base + 128*mib, End: base + 192*mib, Perms: rw | PermShared, Size: 64 * mib},
				{Start: base + 192*mib, End: base + 256*mib, Perms: rw | PermExec, Size: 64 * mib},
			},
			want: HeapMappings{},
			note: "no anonymous rw-p mappings",
		},
		{
			name: "reserved only",
			maps: []Mapping{anon(base, base+64*mib, none, goNo, 0)},
			want: HeapMappings{},
			note: "no anonymous rw-p mappings",
		},
		{
			name: "no HeapSys to check against",
			maps: []Mapping{
				anon(base, base+8*mib, rw, goRW, 5*mib),
				anon(base+8*mib, base+64*mib, none, goNo, 0),
			},
			want: HeapMappings{Count: 1, Size: 8 * mib, Rss: 5 * mib, PrivateDirty: 5 * mib, Reserved: 64 * mib, Arenas: 1, Confidence: 0.5},
			note: "HeapSys unknown",
		},
		{
			name: "less mapped than HeapSys",
			maps: []Mapping{
				anon(base, base+8*mib, rw, goRW, 5*mib),
				anon(base+8*mib, base+64*mib, none, goNo, 0),
			},
			heapSys: 12 * mib,
			want:    HeapMappings{Count: 1, Size: 8 * mib, Rss: 5 * mib, PrivateDirty: 5 * mib, Reserved: 64 * mib, Arenas: 1, HeapSys: 12 * mib, Confidence: 0.2},
			note:    "less than HeapSys",
		},
		{
			name:    "HeapSys needs one more arena",
			maps:    []Mapping{anon(base, base+64*mib, rw, goRW, 60*mib)},
			heapSys: 64*mib + 1,
			want:    HeapMappings{Count: 1, Size: 64 * mib, Rss: 60 * mib, PrivateDirty: 60 * mib, Reserved: 64 * mib, Arenas: 1, HeapSys: 64*mib + 1, Confidence: 0.2},
			note:    "less than HeapSys",
		},
		{
			name: "far more mapped than HeapSys",
			maps: []Mapping{
				anon(base, base+640*mib, rw, goRW, 600*mib),
			},
			heapSys: 100 * mib,
			want:    HeapMappings{Count: 1, Size: 640 * mib, Rss: 600 * mib, PrivateDirty: 600 * mib, Reserved: 640 * mib, Arenas: 10, HeapSys: 100 * mib, Consistent: true, Confidence: 0.6},
			note:    "goroutine stacks",
		},
		{
			name: "no mappings",
			want: HeapMappings{HeapSys: 1},
			// HeapSys given but nothing found.
			heapSys: 1,
			note:    "not a Go process",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := GoHeap(tt.maps, tt.heapSys)
			if len(got.Mappings) != got.Count {
				t.Errorf("%d Mappings, Count %d", len(got.Mappings), got.Count)
			}
			for _, m := range got.Mappings {
				if m.Perms != rw || !m.Anon() {
					t.Errorf("heap mapping %x-%x %v %q is not anonymous rw-p", m.Start, m.End, m.Perms, m.Path)
				}
			}
			note := got.Note
			got.Mappings, got.Note = nil, ""
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("GoHeap\n got %+v\nwant %+v", got, tt.want)
			}
			if tt.note == "" && note != "" || !strings.Contains(note, tt.note) {
				t.Errorf("Note = %q, want it to contain %q", note, tt.note)
			}
		})
	}
}

func TestArenaCandidate(t *testing.T) {
	const base = 0xc000000000
	tests := []struct {
		name string
		m    Mapping
		want bool
	}{
		{"read-write anonymous", anon(base, base+4*mib, rw, goRW, mib), true},
		{"reserved anonymous", anon(base, base+64*mib, none, goNo, 0), true},
		{"read-only anonymous", anon(base, base+4*mib, PermRead, FlagRead, 0), false},
		{"executable anonymous", anon(base, base+4*mib, rw|PermExec, goRW|FlagExec, 0), false},
		{"no swap reserved (C arena, race shadow)", anon(base, base+4*mib, rw, goRW|FlagNoReserve, mib), false},
		{"shared anonymous", anon(base, base+4*mib, rw|PermShared, goRW|FlagShared, mib), false},
		{"file-backed", Mapping{Start: base, End: base + 4*mib, Perms: rw, Inode: 7, Path: "/srv/data"}, false},
		{"pseudo-path", Mapping{Start: base, End: base + 4*mib, Perms: rw, Path: "[heap]"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ArenaCandidate(&tt.m); got != tt.want {
				t.Errorf("ArenaCandidate(%s %s %q) = %v, want %v", tt.m.Perms, tt.m.Flags, tt.m.Path, got, tt.want)
			}
		})
	}
}

func TestGoHeap_testdata(t *testing.T) {
	maps, err := ParseSmaps(bytes.NewReader(readTestdata(t, "smaps", "service.txt")))
	if err != nil {
		t.Fatal(err)
	}
	h := GoHeap(maps, 103*mib)
	if h.Count != 1 || h.Size != 104*mib || h.Rss != 96*mib || h.Swap != mib || h.Arenas != 2 || !h.Consistent {
		t.Errorf("GoHeap = %+v, want the one 104 MiB arena mapping", h)
	}
}

// heapSink keeps the test's allocations alive.
var heapSink [][]byte

func TestGoHeap_self(t *testing.T) {
	// Grow the heap by 100 MiB of memory that is written, so resident.
	const chunks = 100
	heapSink = make([][]byte, chunks)
	for i := range heapSink {
		b := make([]byte, mib)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		heapSink[i] = b
	}
	defer func() { heapSink = nil }()

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	maps, err := Proc{}.Smaps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	h := GoHeap(maps, ms.HeapSys)
	t.Logf("HeapSys %d MiB, HeapInuse %d MiB, HeapReleased %d MiB; found %d mappings in %d arenas: Size %d MiB, Rss %d MiB; %s",
		ms.HeapSys>>20, ms.HeapInuse>>20, ms.HeapReleased>>20, h.Count, h.Arenas, h.Size>>20, h.Rss>>20, h.Note)
	if !h.Consistent {
		t.Errorf("GoHeap of the test process is not consistent: %s", h.Note)
	}
	if h.Size < ms.HeapSys {
		t.Errorf("heap mappings total %d, want at least HeapSys %d", h.Size, ms.HeapSys)
	}
	// Goroutine stacks share the arenas; a little more is growth.
	if limit := ms.HeapSys + ms.StackSys + 8*mib; h.Size > limit {
		t.Errorf("heap mappings total %d, more than HeapSys+StackSys+8MiB %d: something else was counted", h.Size, limit)
	}
	// The 100 MiB written are resident; the rest of HeapInuse mostly.
	if h.Rss < chunks*mib || h.Rss < ms.HeapInuse*9/10 {
		t.Errorf("heap mappings' Rss %d, want at least the %d bytes written and about HeapInuse %d", h.Rss, chunks*mib, ms.HeapInuse)
	}
	if h.Reserved%ArenaSize != 0 || h.Reserved < (ms.HeapSys+ArenaSize-1)/ArenaSize*ArenaSize {
		t.Errorf("Reserved %d is not whole arenas covering HeapSys %d", h.Reserved, ms.HeapSys)
	}
	runtime.KeepAlive(heapSink)
}
