package compare_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/heapscope/heapscope/internal/compare"
	"github.com/heapscope/heapscope/internal/compare/comparetest"
	"github.com/heapscope/heapscope/internal/result"
)

const (
	processFn = "example.com/cache.(*Worker).Process"
	encodeFn  = "encoding/json.(*encodeState).marshal"
	logFn     = "example.com/cache.logRequest"
	cacheFile = "/src/cache/cache.go"
)

// sideOf builds a side of n runs of 10 000 requests each. Process
// allocates process bytes per request, the JSON encoder 200 and the
// logger 40; every figure gets noise of a few percent from a seeded
// generator, so repeated runs vary as real ones do.
func sideOf(label string, n int, process float64, heap uint64, seed uint64) compare.Side {
	rng := rand.New(rand.NewPCG(seed, 7))
	noise := func(v float64) float64 { return v * (1 + (rng.Float64()-0.5)*0.06) }
	side := compare.Side{Label: label}
	for i := range n {
		const reqs = 10000
		r := comparetest.Run(comparetest.RunOptions{
			Duration: 10, Requests: reqs, Rate: 1000,
			HeapInuse: uint64(noise(float64(heap))), Sys: uint64(noise(float64(heap) * 2)),
			RSS: uint64(noise(float64(heap) * 2.2)), AllocRate: noise(process * 1000),
			GCPerSecond: noise(5), PauseP99: noise(0.0004), PauseMax: noise(0.0009), GCCPU: noise(0.02),
			LatencyP50: noise(0.0008), LatencyP99: noise(0.004),
		})
		smp := comparetest.Sample(fmt.Sprintf("%s-%d", label, i+1), r,
			comparetest.Alloc{Function: processFn, File: cacheFile, Line: 42, Bytes: int64(noise(process) * reqs), Objects: 2 * reqs},
			comparetest.Alloc{Function: encodeFn, File: "/go/src/encoding/json/encode.go", Line: 300, Bytes: int64(noise(200) * reqs), Objects: 3 * reqs},
			comparetest.Alloc{Function: logFn, File: cacheFile, Line: 77, Bytes: int64(noise(40) * reqs), Objects: reqs},
		)
		side.Samples = append(side.Samples, smp)
	}
	return side
}

func findSite(sites []compare.SiteChange, function string) (compare.SiteChange, bool) {
	for _, s := range sites {
		if s.Function == function {
			return s, true
		}
	}
	return compare.SiteChange{}, false
}

func figure(t interface{ Fatalf(string, ...any) }, c *compare.Comparison, name string) compare.FigureChange {
	f, ok := c.Figure(name)
	if !ok {
		t.Fatalf("no figure %s", name)
	}
	return f
}

var _ = result.Figures
