package compare_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/heapscope/heapscope/internal/compare/comparetest"
	"github.com/heapscope/heapscope/internal/pprofx"

	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/result"
)

func FuzzParseGate(f *testing.F) {
	for _, s := range []string{"bytes_per_request>+5%", "Process.*:objects_per_request>0", "throughput_per_second<-10%", "rss_bytes>1e9", ":>", "a:b:c>1%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		g, err := compare.ParseGate(expr)
		if err != nil {
			return
		}
		if _, ok := result.FigureByName(g.Unit); !ok {
			t.Fatalf("gate %q accepted with unit %q, not a figure", expr, g.Unit)
		}
		if g.Name != nil && g.Unit != "bytes_per_request" && g.Unit != "objects_per_request" {
			t.Fatalf("gate %q selects sites on %s", expr, g.Unit)
		}
	})
}

// FuzzCompare feeds Compare allocs-delta profiles as read from a run
// directory: whatever parses must compare without a panic, and with finite
// per-site values.
func FuzzCompare(f *testing.F) {
	for _, p := range []*profile.Profile{
		comparetest.Allocs(comparetest.Alloc{Function: "a.F", File: "a.go", Line: 3, Bytes: 4096, Objects: 2}),
		comparetest.Allocs(comparetest.Alloc{Function: "a.F", File: "a.go", Line: 3, Bytes: -4096, Objects: -2}, comparetest.Alloc{Function: "b.G", Bytes: 1 << 40, Objects: 1}),
		comparetest.Allocs(),
	} {
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes(), uint16(100))
	}
	f.Fuzz(func(t *testing.T, data []byte, requests uint16) {
		p, err := pprofx.Parse(data, 1<<20)
		if err != nil {
			return
		}
		run := func() *result.Run { return comparetest.Run(comparetest.RunOptions{Requests: uint64(requests)}) }
		before := compare.Side{Samples: []compare.Sample{{Label: "a", Run: run(), Allocs: p}}}
		after := compare.Side{Samples: []compare.Sample{{Label: "b", Run: run(), Allocs: comparetest.Allocs(comparetest.Alloc{Function: "a.F", File: "a.go", Line: 3, Bytes: 1, Objects: 1})}}}
		c, err := compare.Compare(before, after, compare.Options{})
		if err != nil {
			return
		}
		for _, s := range append(c.Grew, c.Shrank...) {
			if math.IsNaN(s.BytesDelta) || math.IsInf(s.BytesDelta, 0) {
				t.Fatalf("site %+v has a non-finite delta", s)
			}
		}
		// Building the differential flame graph must not panic either.
		_, _ = compare.Flame(before, after, c)
	})
}
