package exectrace

import (
	"bytes"
	"os"
	"testing"
)

// BenchmarkRead reads the recorded trace: most of the time is the trace
// reader's; the timeline adds a few allocations per GC cycle and heap
// point.
func BenchmarkRead(b *testing.B) {
	data, err := os.ReadFile("testdata/alloc.trace")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDownsample(b *testing.B) {
	ps := make([]Point, 100000)
	for i := range ps {
		ps[i] = Point{T: 0, Value: uint64(i * 7919 % 100003)}
	}
	b.ReportAllocs()
	for b.Loop() {
		Downsample(ps, DefaultMaxPoints)
	}
}
