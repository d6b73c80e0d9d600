package allocbench

import (
	"math"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/goldenfile"
)

var (
	sparsePtr   = Pattern{Large: true, Pointers: true, Container: ContainerSlice, Sparse: true}
	sparseNoptr = Pattern{Large: true, Container: ContainerSlice, Sparse: true}
	threeChains = []Toolchain{{"go1.23.12", "go1.23.12"}, {"go1.24.3", "go1.24.3"}, {"go1.25.0", "go1.25.0"}}
)

// samples makes n runs of pattern p under toolchain tc whose heap Rss is
// rss MiB (plus a small deterministic jitter) for 64 MiB of HeapAlloc.
func samples(p Pattern, tc string, n int, rss float64) []Sample {
	var out []Sample
	for i := range n {
		jitter := 1 + 0.002*float64(i%3) - 0.002
		out = append(out, Sample{
			Pattern: p.Name(), Toolchain: tc, GoVersion: tc,
			HeapAlloc: 64 << 20, HeapInuse: 64<<20 + 256<<10, HeapSys: 68 << 20, HeapReleased: 3 << 20, Sys: 70 << 20,
			VmRSS:   uint64((rss + 2) * jitter * (1 << 20)),
			HeapRss: uint64(rss * jitter * (1 << 20)), HeapMapped: 68 << 20,
		})
	}
	return out
}

// regressionSamples is the shape of golang/go#72991: the large,
// pointer-holding, mostly untouched slice is resident under go1.24.3
// only; the pointer-free one is not under any.
func regressionSamples(n int) []Sample {
	var s []Sample
	s = append(s, samples(sparsePtr, "go1.23.12", n, 4.4)...)
	s = append(s, samples(sparsePtr, "go1.24.3", n, 64.4)...)
	s = append(s, samples(sparsePtr, "go1.25.0", n, 4.5)...)
	s = append(s, samples(sparseNoptr, "go1.23.12", n, 4.4)...)
	s = append(s, samples(sparseNoptr, "go1.24.3", n, 4.6)...)
	s = append(s, samples(sparseNoptr, "go1.25.0", n, 4.5)...)
	return s
}

func TestAnalyse(t *testing.T) {
	patterns := []Pattern{sparsePtr, sparseNoptr}
	tests := []struct {
		name      string
		samples   []Sample
		opts      Options
		wantFlags map[string]int
		standout  string
		warning   string
	}{
		{
			name:      "regression flagged, pointer-free twin not",
			samples:   regressionSamples(5),
			wantFlags: map[string]int{sparsePtr.Name(): 2, sparseNoptr.Name(): 0},
			standout:  "go1.24.3",
		},
		{
			name:      "three runs cannot reach alpha 0.05",
			samples:   regressionSamples(3),
			wantFlags: map[string]int{sparsePtr.Name(): 0, sparseNoptr.Name(): 0},
			warning:   "smallest p-value",
		},
		{
			name:      "three runs reach alpha 0.1",
			samples:   regressionSamples(3),
			opts:      Options{Alpha: 0.1},
			wantFlags: map[string]int{sparsePtr.Name(): 2, sparseNoptr.Name(): 0},
			standout:  "go1.24.3",
		},
		{
			name:      "a difference below the minimum effect is not flagged",
			samples:   regressionSamples(5),
			opts:      Options{MinEffect: 20},
			wantFlags: map[string]int{sparsePtr.Name(): 0, sparseNoptr.Name(): 0},
		},
		{
			name:      "a missing cell is a warning",
			samples:   samples(sparsePtr, "go1.23.12", 5, 4),
			wantFlags: map[string]int{sparsePtr.Name(): 0, sparseNoptr.Name(): 0},
			warning:   "under go1.24.3: no runs",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Analyse(tt.samples, patterns, threeChains, 64<<20, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range r.Patterns {
				if got := len(p.Flags); got != tt.wantFlags[p.Name] {
					t.Errorf("%s: %d flags %+v, want %d", p.Name, got, p.Flags, tt.wantFlags[p.Name])
				}
				if p.Name == sparsePtr.Name() {
					if got := p.Standout(); got != tt.standout {
						t.Errorf("%s stands out: %q, want %q", p.Name, got, tt.standout)
					}
				}
			}
			warnings := strings.Join(r.Warnings, "\n")
			if tt.warning == "" && warnings != "" || !strings.Contains(warnings, tt.warning) {
				t.Errorf("warnings %q, want %q", warnings, tt.warning)
			}
		})
	}
}

func TestAnalyse_figures(t *testing.T) {
	r, err := Analyse(regressionSamples(5), []Pattern{sparsePtr, sparseNoptr}, threeChains, 64<<20, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := r.Patterns[0].Cells[1]
	if c.Toolchain != "go1.24.3" || c.Runs != 5 {
		t.Fatalf("cell %s with %d runs, want go1.24.3 with 5", c.Toolchain, c.Runs)
	}
	if got := c.RSSPerHeapByte.Median; math.Abs(got-64.4/64) > 0.01 {
		t.Errorf("RSS per heap byte %v, want about %v", got, 64.4/64)
	}
	if c.RSSPerHeapByte.Lo > c.RSSPerHeapByte.Median || c.RSSPerHeapByte.Hi < c.RSSPerHeapByte.Median {
		t.Errorf("interval %+v does not hold its median", c.RSSPerHeapByte)
	}
	if c.HeapAlloc.Median != 64<<20 || c.HeapSys.Median != 68<<20 {
		t.Errorf("HeapAlloc %v, HeapSys %v", c.HeapAlloc.Median, c.HeapSys.Median)
	}
	f := r.Patterns[0].Flags[0]
	if f.A != "go1.23.12" || f.B != "go1.24.3" || f.Ratio < 10 || f.P > 0.05 {
		t.Errorf("first flag %+v, want go1.24.3 about 14× go1.23.12 with p ≤ 0.05", f)
	}
}

func TestAnalyse_unknownSample(t *testing.T) {
	tests := []struct {
		name string
		s    Sample
		want string
	}{
		{"pattern", Sample{Pattern: "huge-ptr-slice", Toolchain: "go1.23.12"}, "not in the matrix"},
		{"toolchain", Sample{Pattern: sparsePtr.Name(), Toolchain: "go1.20"}, "not asked for"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Analyse([]Sample{tt.s}, []Pattern{sparsePtr}, threeChains, 64<<20, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestMinP(t *testing.T) {
	tests := []struct {
		n1, n2 int
		want   float64
	}{
		{3, 3, 0.1},
		{5, 5, 2.0 / 252},
		{1, 1, 1},
	}
	for _, tt := range tests {
		if got := minP(tt.n1, tt.n2); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("minP(%d, %d) = %v, want %v", tt.n1, tt.n2, got, tt.want)
		}
	}
}

// TestReport_JSON checks the report of the regression's samples as
// allocbench --format json prints it, which --from reads back and
// report's tests render.
func TestReport_JSON(t *testing.T) {
	r, err := Analyse(regressionSamples(5), []Pattern{sparsePtr, sparseNoptr}, threeChains, 64<<20, Options{})
	if err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, "testdata/golden/regression.json", mustJSON(t, r))
}
