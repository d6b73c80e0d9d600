package sysmem

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

func readTestdata(t testing.TB, elem ...string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, elem...)...))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseSmaps(t *testing.T) {
	maps, err := ParseSmaps(bytes.NewReader(readTestdata(t, "smaps", "service.txt")))
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 12 {
		t.Fatalf("ParseSmaps returned %d mappings, want 12", len(maps))
	}
	const arena = 0x3ee6a4000000
	tests := []struct {
		name string
		got  Mapping
		want Mapping
	}{
		{
			name: "executable text",
			got:  maps[0],
			want: Mapping{
				Start: 0x400000, End: 0x5f0000, Perms: PermRead | PermExec, Dev: Device{0xfe, 0x01}, Inode: 1835009,
				Path: "/usr/local/bin/kvservice", Size: 1984 << 10, Rss: 1800 << 10, Pss: 1800 << 10, PrivateClean: 1800 << 10,
				Flags: FlagRead | FlagExec | FlagMayRead | FlagMayWrite | FlagMayExec | FlagDenyWrite,
			},
		},
		{
			name: "file data with an offset",
			got:  maps[2],
			want: Mapping{
				Start: 0x7e0000, End: 0x81c000, Perms: PermRead | PermWrite, Offset: 0x3e0000, Dev: Device{0xfe, 0x01}, Inode: 1835009,
				Path: "/usr/local/bin/kvservice", Size: 240 << 10, Rss: 240 << 10, Pss: 240 << 10, PrivateClean: 40 << 10, PrivateDirty: 200 << 10,
				Anonymous: 200 << 10, Flags: FlagRead | FlagWrite | FlagMayRead | FlagMayWrite | FlagMayExec | FlagDenyWrite | FlagAccount,
			},
		},
		{
			name: "anonymous heap arena",
			got:  maps[5],
			want: Mapping{
				Start: arena + 20<<20, End: arena + 124<<20, Perms: PermRead | PermWrite,
				Size: 104 << 20, Rss: 96 << 20, Pss: 96 << 20, PrivateDirty: 96 << 20, Anonymous: 96 << 20, AnonHugePages: 2 << 20,
				Swap: 1 << 20, SwapPss: 1 << 20, Flags: FlagRead | FlagWrite | FlagMayRead | FlagMayWrite | FlagMayExec | FlagAccount,
			},
		},
		{
			name: "shared deleted file with spaces in its name",
			got:  maps[8],
			want: Mapping{
				Start: 0x7f1c21a2d000, End: 0x7f1c21a4d000, Perms: PermRead | PermWrite | PermShared, Dev: Device{0, 5}, Inode: 2048,
				Path: "/dev/shm/kv cache (v2) (deleted)", Size: 128 << 10, Rss: 128 << 10, Pss: 64 << 10, SharedDirty: 128 << 10,
				Flags: FlagRead | FlagWrite | FlagShared | FlagMayRead | FlagMayWrite | FlagMayExec | FlagMayShare,
			},
		},
		{
			name: "stack",
			got:  maps[10],
			want: Mapping{
				Start: 0x7fff3742f000, End: 0x7fff37450000, Perms: PermRead | PermWrite, Path: "[stack]",
				Size: 132 << 10, Rss: 44 << 10, Pss: 44 << 10, PrivateDirty: 44 << 10, Anonymous: 44 << 10,
				Flags: FlagRead | FlagWrite | FlagMayRead | FlagMayWrite | FlagMayExec | FlagGrowsDown | FlagAccount,
			},
		},
		{
			name: "vsyscall at the top of the address space",
			got:  maps[11],
			want: Mapping{
				Start: 0xffffffffff600000, End: 0xffffffffff601000, Perms: PermExec, Path: "[vsyscall]", Size: 4 << 10, Flags: FlagExec,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("mapping\n got %+v\nwant %+v", tt.got, tt.want)
			}
		})
	}
	t.Run("every size matches its range", func(t *testing.T) {
		for _, m := range maps {
			if m.Size != m.End-m.Start {
				t.Errorf("%x-%x: Size %d, want %d", m.Start, m.End, m.Size, m.End-m.Start)
			}
		}
	})
	t.Run("anonymous", func(t *testing.T) {
		var anon []int
		for i := range maps {
			if maps[i].Anon() {
				anon = append(anon, i)
			}
		}
		if want := []int{3, 4, 5, 6, 7}; !slices.Equal(anon, want) {
			t.Errorf("anonymous mappings %v, want %v", anon, want)
		}
	})
}

func TestParseSmaps_oldKernel(t *testing.T) {
	maps, err := ParseSmaps(bytes.NewReader(readTestdata(t, "smaps", "linux-3.2.txt")))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{Start: 0x400000, End: 0x452000, Perms: PermRead | PermExec, Dev: Device{8, 2}, Inode: 173521, Path: "/usr/bin/dbus-daemon",
			Size: 328 << 10, Rss: 300 << 10, Pss: 150 << 10, SharedClean: 300 << 10},
		{Start: 0x651000, End: 0x652000, Perms: PermRead | PermWrite, Offset: 0x51000, Dev: Device{8, 2}, Inode: 173521, Path: "/usr/bin/dbus-daemon",
			Size: 4 << 10, Rss: 4 << 10, Pss: 4 << 10, PrivateDirty: 4 << 10, Anonymous: 4 << 10},
	}
	if len(maps) != len(want) {
		t.Fatalf("got %d mappings, want %d", len(maps), len(want))
	}
	for i := range want {
		if maps[i] != want[i] {
			t.Errorf("mapping %d\n got %+v\nwant %+v", i, maps[i], want[i])
		}
	}
}

func TestParseSmaps_empty(t *testing.T) {
	maps, err := ParseSmaps(strings.NewReader(""))
	if err != nil || len(maps) != 0 {
		t.Errorf("ParseSmaps(\"\") = %v, %v; want no mappings, no error", maps, err)
	}
}

func TestParseSmaps_errors(t *testing.T) {
	const hdr = "00400000-00452000 r-xp 00000000 08:02 173521 /bin/x\n"
	tests := []struct {
		name     string
		in       string
		wantLine int
		wantMsg  string
	}{
		{"field before header", "Size: 4 kB\n", 1, `field "Size:" before the first mapping`},
		{"no dash in range", "00400000 r-xp 00000000 08:02 1 /bin/x\n", 1, "address range"},
		{"end before start", "00500000-00400000 r-xp 00000000 08:02 1\n", 1, "address range"},
		{"range not hex", hdr + "Size: 4 kB\n0040000g-00500000 r-xp 00000000 08:02 1\n", 3, "address range"},
		{"address too long", "00000000000000000-1 r-xp 00000000 08:02 1\n", 1, "address range"},
		{"bad perms", "00400000-00452000 rwxq 00000000 08:02 1\n", 1, "permissions"},
		{"short perms", "00400000-00452000 rw 00000000 08:02 1\n", 1, "permissions"},
		{"bad offset", "00400000-00452000 r-xp zz 08:02 1\n", 1, "offset"},
		{"bad device", "00400000-00452000 r-xp 00000000 0802 1\n", 1, "device"},
		{"device too big", "00400000-00452000 r-xp 00000000 100000000:00 1\n", 1, "device"},
		{"bad inode", "00400000-00452000 r-xp 00000000 08:02 -1\n", 1, "inode"},
		{"missing inode", "00400000-00452000 r-xp 00000000 08:02\n", 1, "inode"},
		{"bad size", hdr + "Size:\n", 2, `Size: bad size ""`},
		{"bad rss unit", hdr + "Size: 4 kB\nRss: 4 MB\n", 3, `Rss: bad size "4 MB"`},
		{"garbage line", hdr + "Size: 4 kB\nhello world\n", 3, "address range"},
		{"too long", hdr + "Size: " + strings.Repeat("1", maxLine) + " kB\n", 2, "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSmaps(strings.NewReader(tt.in))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("ParseSmaps error = %v, want a *SyntaxError", err)
			}
			if se.Line != tt.wantLine || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("ParseSmaps error = %q (line %d), want line %d and %q", err, se.Line, tt.wantLine, tt.wantMsg)
			}
			if !strings.HasPrefix(err.Error(), "parse smaps: line ") {
				t.Errorf("ParseSmaps error = %q, want it to start with \"parse smaps: line \"", err)
			}
		})
	}
}

func TestParseSmaps_unknownFieldsSkipped(t *testing.T) {
	in := "00400000-00401000 rw-p 00000000 00:00 0 \nSize: 4 kB\nFutureField: what ever\nProtectionKey:  0\nVmFlags: rd wr zz \n"
	maps, err := ParseSmaps(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := Mapping{Start: 0x400000, End: 0x401000, Perms: PermRead | PermWrite, Size: 4 << 10, Flags: FlagRead | FlagWrite}
	if len(maps) != 1 || maps[0] != want {
		t.Errorf("ParseSmaps = %+v, want [%+v]", maps, want)
	}
}

func TestParseSmaps_pathShared(t *testing.T) {
	maps, err := ParseSmaps(bytes.NewReader(readTestdata(t, "smaps", "service.txt")))
	if err != nil {
		t.Fatal(err)
	}
	// Consecutive mappings of one file share one string.
	if p0, p1 := maps[0].Path, maps[1].Path; p0 != p1 || !sameString(p0, p1) {
		t.Errorf("paths %q and %q are not one string", p0, p1)
	}
}

// sameString reports whether a and b share their bytes.
func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

func TestPerms_String(t *testing.T) {
	for _, s := range []string{"---p", "r--p", "rw-p", "r-xp", "rwxs", "--xp", "-w-s"} {
		p, ok := parsePerms([]byte(s))
		if !ok {
			t.Fatalf("parsePerms(%q) failed", s)
		}
		if p.String() != s {
			t.Errorf("parsePerms(%q).String() = %q", s, p.String())
		}
	}
}

func TestDevice_String(t *testing.T) {
	if got := (Device{Major: 0xfe, Minor: 1}).String(); got != "fe:01" {
		t.Errorf("Device.String() = %q, want fe:01", got)
	}
}

func TestVMFlags_String(t *testing.T) {
	const all = "rd wr ex sh mr mw me ms gd pf dw lo io sr rr dc de ac nr ht sf nl ar wf dd sd mm hg nh mg um uw ss sl"
	f := parseVMFlags([]byte(all))
	if f != flagEnd-1 {
		t.Errorf("parseVMFlags(all) = %b, want every bit below %b", f, flagEnd)
	}
	if got := f.String(); got != all {
		t.Errorf("String() = %q, want %q", got, all)
	}
	if got := parseVMFlags([]byte("rd  wr xx mr ")).String(); got != "rd wr mr" {
		t.Errorf("String() = %q, want \"rd wr mr\"", got)
	}
}

func TestProc_Smaps(t *testing.T) {
	t.Run("testdata", func(t *testing.T) {
		maps, err := Proc{Root: "testdata/root"}.Smaps(42)
		if err != nil {
			t.Fatal(err)
		}
		if len(maps) != 12 || maps[10].Path != "[stack]" {
			t.Errorf("Smaps = %d mappings, want 12 ending with [stack] and [vsyscall]", len(maps))
		}
	})
	t.Run("self", func(t *testing.T) {
		maps, err := Proc{}.Smaps(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		var stack, text bool
		var rss uint64
		for i, m := range maps {
			if m.Size != m.End-m.Start {
				t.Errorf("%x-%x: Size %d, want %d", m.Start, m.End, m.Size, m.End-m.Start)
			}
			if i > 0 && m.Start < maps[i-1].End {
				t.Errorf("mapping %x-%x overlaps or precedes %x-%x", m.Start, m.End, maps[i-1].Start, maps[i-1].End)
			}
			if m.Rss > m.Size || m.PrivateDirty+m.PrivateClean+m.SharedDirty+m.SharedClean != m.Rss {
				t.Errorf("%x-%x: Rss %d does not split into its parts: %+v", m.Start, m.End, m.Rss, m)
			}
			stack = stack || m.Path == "[stack]"
			text = text || m.Path == exe && m.Perms&PermExec != 0
			rss += m.Rss
		}
		if !stack || !text {
			t.Errorf("found [stack]: %v, executable text of %s: %v; want both", stack, exe, text)
		}
		st, err := Proc{}.Status(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		// The two files are read at different times, and the test
		// process's goroutines allocate in between.
		if lo, hi := st.VmRSS/2, st.VmRSS*2; rss < lo || rss > hi {
			t.Errorf("mappings' Rss total %d, far from VmRSS %d", rss, st.VmRSS)
		}
	})
	t.Run("missing process", func(t *testing.T) {
		_, err := Proc{Root: "testdata/root"}.Smaps(999)
		assertNotFound(t, err, 999)
	})
}

func TestProc_SmapsRollup(t *testing.T) {
	t.Run("testdata", func(t *testing.T) {
		m, err := Proc{Root: "testdata/root"}.SmapsRollup(42)
		if err != nil {
			t.Fatal(err)
		}
		want := Mapping{
			Start: 0x55a28ff46000, End: 0x7fff7c7bd000, Path: "[rollup]",
			Rss: 198412 << 10, Pss: 196000 << 10, SharedClean: 4800 << 10, PrivateClean: 4608 << 10, PrivateDirty: 189004 << 10,
			Anonymous: 189004 << 10, AnonHugePages: 2048 << 10, Swap: 1024 << 10, SwapPss: 1024 << 10,
		}
		if m != want {
			t.Errorf("SmapsRollup\n got %+v\nwant %+v", m, want)
		}
	})
	t.Run("self", func(t *testing.T) {
		m, err := Proc{}.SmapsRollup(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if m.Path != "[rollup]" || m.Rss == 0 || m.Anonymous == 0 {
			t.Errorf("SmapsRollup = %+v, want a [rollup] entry with Rss and Anonymous", m)
		}
	})
	t.Run("two entries", func(t *testing.T) {
		_, err := Proc{Root: "testdata/root"}.SmapsRollup(43)
		if err == nil || !strings.Contains(err.Error(), "want 1") {
			t.Errorf("SmapsRollup of a full smaps = %v, want an error about the entry count", err)
		}
	})
}

func FuzzParseSmaps(f *testing.F) {
	for _, name := range []string{"service.txt", "linux-3.2.txt", "rollup.txt"} {
		f.Add(readTestdata(f, "smaps", name))
	}
	f.Add([]byte("00400000-00401000 rw-p 00000000 00:00 0 \nSize: 4 kB\n"))
	f.Add([]byte("0-1 ---p 0 0:0 0 [x]\nVmFlags:\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		maps, err := ParseSmaps(bytes.NewReader(data))
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Line < 1 {
				t.Fatalf("error %v is not a *SyntaxError with a line", err)
			}
			return
		}
		for _, m := range maps {
			if m.End < m.Start {
				t.Fatalf("mapping ends before it starts: %+v", m)
			}
			if m.Size%1024 != 0 || m.Rss%1024 != 0 {
				t.Fatalf("sizes not whole kB: %+v", m)
			}
		}
		// Whatever parses gives the Go heap finder no trouble.
		GoHeap(maps, 64<<20)
	})
}

// syntheticSmaps returns the smaps of a process with n mappings, shaped
// like a big cgo service's: mostly anonymous memory and guard pages, two
// shared libraries, and a mapped file every 64 mappings.
func syntheticSmaps(n int) []byte {
	var buf bytes.Buffer
	buf.Grow(n * 900)
	addr := uint64(0x7f0000000000)
	num := make([]byte, 0, 32)
	field := func(name string, kb uint64) {
		buf.WriteString(name)
		for i := len(name); i < 16; i++ {
			buf.WriteByte(' ')
		}
		num = strconv.AppendUint(num[:0], kb, 10)
		for i := len(num); i < 8; i++ {
			buf.WriteByte(' ')
		}
		buf.Write(num)
		buf.WriteString(" kB\n")
	}
	for i := range n {
		size := uint64(4<<10) << (i % 8)
		num = strconv.AppendUint(num[:0], addr, 16)
		buf.Write(num)
		buf.WriteByte('-')
		num = strconv.AppendUint(num[:0], addr+size, 16)
		buf.Write(num)
		switch {
		case i%64 == 0:
			buf.WriteString(" rw-s 00000000 fe:01 2621447                    /var/lib/example/segment-" + strconv.Itoa(i) + ".db\n")
		case i%8 == 1:
			buf.WriteString(" r-xp 00000000 fe:01 1835009                    /usr/lib/x86_64-linux-gnu/libexample.so.1\n")
		case i%8 == 2:
			buf.WriteString(" r--p 00000000 fe:01 1835010                    /usr/lib/x86_64-linux-gnu/libother.so.2\n")
		case i%8 == 3:
			buf.WriteString(" ---p 00000000 00:00 0 \n")
		default:
			buf.WriteString(" rw-p 00000000 00:00 0 \n")
		}
		kb := size >> 10
		field("Size:", kb)
		field("KernelPageSize:", 4)
		field("MMUPageSize:", 4)
		field("Rss:", kb/2)
		field("Pss:", kb/2)
		field("Pss_Dirty:", kb/2)
		field("Shared_Clean:", 0)
		field("Shared_Dirty:", 0)
		field("Private_Clean:", 0)
		field("Private_Dirty:", kb/2)
		field("Referenced:", kb/2)
		field("Anonymous:", kb/2)
		field("KSM:", 0)
		field("LazyFree:", 0)
		field("AnonHugePages:", 0)
		field("ShmemPmdMapped:", 0)
		field("FilePmdMapped:", 0)
		field("Shared_Hugetlb:", 0)
		field("Private_Hugetlb:", 0)
		field("Swap:", 0)
		field("SwapPss:", 0)
		field("Locked:", 0)
		buf.WriteString("THPeligible:    0\nVmFlags: rd wr mr mw me ac \n")
		addr += size + 4096
	}
	return buf.Bytes()
}

func TestSyntheticSmaps(t *testing.T) {
	maps, err := ParseSmaps(bytes.NewReader(syntheticSmaps(100)))
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 100 || maps[99].Rss != maps[99].Size/2 || maps[1].Path != "/usr/lib/x86_64-linux-gnu/libexample.so.1" || maps[64].Path != "/var/lib/example/segment-64.db" {
		t.Errorf("synthetic smaps parsed into %d mappings, last %+v", len(maps), maps[len(maps)-1])
	}
}

func BenchmarkParseSmaps(b *testing.B) {
	data := syntheticSmaps(100_000)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	r := bytes.NewReader(data)
	for b.Loop() {
		r.Reset(data)
		maps, err := ParseSmaps(r)
		if err != nil || len(maps) != 100_000 {
			b.Fatal(len(maps), err)
		}
	}
}
