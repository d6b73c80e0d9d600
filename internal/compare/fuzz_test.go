package compare_test

import (
	"testing"

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
