package rss_test

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"

	"github.com/heapscope/heapscope/internal/rss"
	"github.com/heapscope/heapscope/internal/sysmem"
)

// syntheticSmaps writes an smaps file of n mappings shaped like a big
// service's: runs of anonymous memory and reserved gaps between shared
// libraries and mapped files, and every 1,000 mappings a Go heap arena
// (a 64 MiB-aligned run: reserved, read-write, reserved).
func syntheticSmaps(n int) []byte {
	var buf bytes.Buffer
	buf.Grow(n * 700)
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
	header := func(start, end uint64, rest string) {
		num = strconv.AppendUint(num[:0], start, 16)
		buf.Write(num)
		buf.WriteByte('-')
		num = strconv.AppendUint(num[:0], end, 16)
		buf.Write(num)
		buf.WriteString(rest)
	}
	body := func(size, rss uint64) {
		field("Size:", size>>10)
		field("KernelPageSize:", 4)
		field("MMUPageSize:", 4)
		field("Rss:", rss>>10)
		field("Pss:", rss>>10)
		field("Shared_Clean:", 0)
		field("Shared_Dirty:", 0)
		field("Private_Clean:", 0)
		field("Private_Dirty:", rss>>10)
		field("Referenced:", rss>>10)
		field("Anonymous:", rss>>10)
		field("AnonHugePages:", 0)
		field("Swap:", 0)
		field("SwapPss:", 0)
		field("Locked:", 0)
		buf.WriteString("THPeligible:    0\nVmFlags: rd wr mr mw me ac sd \n")
	}
	const arena = sysmem.ArenaSize
	addr := uint64(0x7f0000000000)
	for i := 0; i < n; i++ {
		if i%1000 == 999 && i+3 <= n {
			// A heap arena, aligned.
			addr = (addr + arena - 1) &^ (arena - 1)
			header(addr, addr+4<<20, " ---p 00000000 00:00 0 \n")
			body(4<<20, 0)
			header(addr+4<<20, addr+12<<20, " rw-p 00000000 00:00 0 \n")
			body(8<<20, 6<<20)
			header(addr+12<<20, addr+arena, " ---p 00000000 00:00 0 \n")
			body(arena-12<<20, 0)
			addr += arena
			i += 2
			continue
		}
		size := uint64(4<<10) << (i % 8)
		switch {
		case i%64 == 0:
			header(addr, addr+size, " rw-s 00000000 fe:01 2621447                    /var/lib/example/segment-"+strconv.Itoa(i)+".db\n")
		case i%8 == 1:
			header(addr, addr+size, " r-xp 00000000 fe:01 1835009                    /usr/lib/x86_64-linux-gnu/libexample.so.1\n")
		case i%8 == 2:
			header(addr, addr+size, " r--p 00000000 fe:01 1835010                    /usr/lib/x86_64-linux-gnu/libother.so.2\n")
		case i%8 == 3:
			header(addr, addr+size, " ---p 00000000 00:00 0 \n")
		default:
			header(addr, addr+size, " rw-p 00000000 00:00 0 \n")
		}
		body(size, size/2)
		addr += size
	}
	return buf.Bytes()
}

// BenchmarkClassifier streams 100,000 mappings through ScanSmaps and a
// Classifier, as heapscope rss reads a big process.
func BenchmarkClassifier(b *testing.B) {
	const n = 100_000
	data := syntheticSmaps(n)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	r := bytes.NewReader(data)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		r.Reset(data)
		var c rss.Classifier
		if err := sysmem.ScanSmaps(r, c.Add); err != nil {
			b.Fatal(err)
		}
		cl := c.Result()
		if cl.Total.Mappings != n || cl.Heap(0).Arenas != n/1000-1 {
			b.Fatalf("%d mappings, %d arenas", cl.Total.Mappings, cl.Heap(0).Arenas)
		}
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/mapping")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N)/n, "allocs/mapping")
}
