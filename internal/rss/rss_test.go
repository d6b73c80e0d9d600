package rss_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/heapscope/heapscope/internal/gcstats"
	"github.com/heapscope/heapscope/internal/rss"
	"github.com/heapscope/heapscope/internal/sysmem"
)

// classifyFile streams a recorded smaps file through a Classifier.
func classifyFile(t testing.TB, path, exe string) rss.Classification {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := rss.Classifier{Exe: exe}
	if err := sysmem.ScanSmaps(f, c.Add); err != nil {
		t.Fatal(err)
	}
	return c.Result()
}

// leakyInput is the input recorded from the leaky cache example under
// load: its smaps, status and heap?debug=1, read within a second.
func leakyInput(t *testing.T, withMemStats bool) rss.Input {
	t.Helper()
	dir := filepath.Join("testdata", "leakycache")
	in := rss.Input{PID: 4242, Mappings: classifyFile(t, filepath.Join(dir, "smaps"), "")}
	f, err := os.Open(filepath.Join(dir, "status"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := sysmem.ParseStatus(f)
	if err != nil {
		t.Fatal(err)
	}
	in.Status = &st
	if withMemStats {
		h, err := os.Open(filepath.Join(dir, "heap-debug.txt"))
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		ms, err := gcstats.ParseHeapDebug(h)
		if err != nil {
			t.Fatal(err)
		}
		in.MemStats = &ms
	}
	return in
}

func TestClassifier_Add(t *testing.T) {
	tests := []struct {
		name, file, exe string
		want            map[rss.Kind]int // mappings per kind
	}{
		{
			name: "service", file: "../sysmem/testdata/smaps/service.txt",
			// kvservice ×3; its bss; a heap arena (---p rw-p ---p); a C
			// arena; /dev/shm; [vvar]; [stack]; [vsyscall].
			want: map[rss.Kind]int{
				rss.KindBinary: 3, rss.KindAnon: 4, rss.KindGoHeap: 1,
				rss.KindReserved: 2, rss.KindFile: 1, rss.KindStack: 1,
			},
		},
		{
			name: "leakycache", file: "testdata/leakycache/smaps", exe: "/usr/local/bin/leakycache",
			want: map[rss.Kind]int{
				rss.KindGoHeap: 1, rss.KindStack: 1, rss.KindAnon: 32,
				rss.KindReserved: 21, rss.KindBinary: 3, rss.KindLibrary: 11,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := classifyFile(t, tt.file, tt.exe)
			var total rss.Usage
			for k := rss.KindGoHeap; k <= rss.KindFile; k++ {
				u := cl.Kind(k)
				if u.Mappings != tt.want[k] {
					t.Errorf("%s: %d mappings, want %d", k, u.Mappings, tt.want[k])
				}
				if u.RSSBytes > u.SizeBytes {
					t.Errorf("%s: rss %d above size %d", k, u.RSSBytes, u.SizeBytes)
				}
				total.Mappings += u.Mappings
				total.RSSBytes += u.RSSBytes
				total.SizeBytes += u.SizeBytes
			}
			if total.Mappings != cl.Total.Mappings || total.RSSBytes != cl.Total.RSSBytes || total.SizeBytes != cl.Total.SizeBytes {
				t.Errorf("kinds sum to %+v, total is %+v", total, cl.Total)
			}
			if cl.Kind(rss.KindReserved).RSSBytes != 0 {
				t.Errorf("reserved address space has rss %d", cl.Kind(rss.KindReserved).RSSBytes)
			}
		})
	}
}

// TestClassifier_Heap checks that the streamed classification finds the
// same Go heap as sysmem.GoHeap over the whole file.
func TestClassifier_Heap(t *testing.T) {
	for _, file := range []string{"../sysmem/testdata/smaps/service.txt", "testdata/leakycache/smaps"} {
		t.Run(filepath.Base(filepath.Dir(file)), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			maps, err := sysmem.ParseSmaps(f)
			if err != nil {
				t.Fatal(err)
			}
			want := sysmem.GoHeap(maps, 8<<20)
			cl := classifyFile(t, file, "")
			got := cl.Heap(8 << 20)
			if got.Count != want.Count || got.Size != want.Size || got.Rss != want.Rss || got.Reserved != want.Reserved || got.Consistent != want.Consistent {
				t.Errorf("streamed heap %+v, GoHeap over the file %+v", got, want)
			}
			if got.Count == 0 {
				t.Error("no heap found")
			}
			if u := cl.Kind(rss.KindGoHeap); u.RSSBytes != want.Rss || u.SizeBytes != want.Size {
				t.Errorf("go_heap kind %+v, GoHeap rss %d size %d", u, want.Rss, want.Size)
			}
		})
	}
}
