package chart

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/heapscope/heapscope/internal/goldenfile"
)

func TestTicks(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi float64
		want   []float64
	}{
		{"tens", 0, 47, []float64{0, 10, 20, 30, 40, 50}},
		{"exact end", 0, 10, []float64{0, 2, 4, 6, 8, 10}},
		{"fives", 0, 22, []float64{0, 5, 10, 15, 20, 25}},
		{"small", 0, 0.00013, []float64{0, 0.00005, 0.0001, 0.00015}},
		{"milliseconds", 0, 0.0042, []float64{0, 0.001, 0.002, 0.003, 0.004, 0.005}},
		{"not from zero", 103, 161, []float64{100, 120, 140, 160, 180}},
		{"negative", -7, 3, []float64{-8, -6, -4, -2, 0, 2, 4}},
		{"one value", 5.5, 5.5, []float64{5, 5.2, 5.4, 5.6, 5.8, 6}},
		{"nothing", 0, 0, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{"reversed", 3, 1, []float64{0, 1}},
		{"not a number", 0, math.NaN(), []float64{0, 1}},
		{"infinite", 0, math.Inf(1), []float64{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Ticks(tt.lo, tt.hi, 5)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Ticks(%v, %v, 5) = %v, want %v", tt.lo, tt.hi, got, tt.want)
			}
		})
	}
}

// TestTicks_span checks over many ranges and step counts that the ticks
// cover the range, are evenly spaced by 1, 2 or 5 times a power of ten,
// and number at most the steps asked for and at least a third of them.
func TestTicks_span(t *testing.T) {
	for _, hi := range []float64{0.37, 1, 3.2, 9.99, 10, 11, 64, 99, 101, 1234, 5e6, 7.3e9} {
		for _, lo := range []float64{0, hi / 3} {
			for _, n := range []int{4, 5, 8, 11} {
				ts := Ticks(lo, hi, n)
				if ts[0] > lo || ts[len(ts)-1] < hi {
					t.Errorf("Ticks(%v, %v) = %v does not span the range", lo, hi, ts)
				}
				if steps := len(ts) - 1; 3*steps < n || steps > n+1 {
					t.Errorf("Ticks(%v, %v, %d) = %v: %d steps", lo, hi, n, ts, steps)
				}
				step := ts[1] - ts[0]
				mant := step / math.Pow10(int(math.Floor(math.Log10(step)+1e-9)))
				if math.Abs(mant-1) > 1e-6 && math.Abs(mant-2) > 1e-6 && math.Abs(mant-5) > 1e-6 {
					t.Errorf("Ticks(%v, %v) = %v: step %v is not 1, 2 or 5 times a power of ten", lo, hi, ts, step)
				}
				for i := 1; i < len(ts); i++ {
					if d := ts[i] - ts[i-1]; math.Abs(d-step) > 1e-9*step*float64(i+1) {
						t.Errorf("Ticks(%v, %v) = %v: uneven at %d", lo, hi, ts, i)
					}
				}
			}
		}
	}
}

func TestByteTicks(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name string
		hi   float64
		want []float64
	}{
		{"bytes", 900, []float64{0, 200, 400, 600, 800, 1000}},
		{"KiB", 3000, []float64{0, 1024, 2048, 3072}},
		{"MiB", 37 * mib, []float64{0, 10 * mib, 20 * mib, 30 * mib, 40 * mib}},
		{"GiB", 1.5 * 1024 * mib, []float64{0, 0.5 * 1024 * mib, 1024 * mib, 1.5 * 1024 * mib}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ByteTicks(0, tt.hi, 5); !slices.Equal(got, tt.want) {
				t.Errorf("ByteTicks(0, %v, 5) = %v, want %v", tt.hi, got, tt.want)
			}
		})
	}
}

// sample is a chart with every element: a title and subtitle, a band,
// each style of series, marks and keys.
func sample() *Chart {
	const mib = 1 << 20
	return &Chart{
		ID: "sample", Title: "Heap <and> goal", Subtitle: "3 GC cycles in 2.5s",
		Width: 720, Height: 320,
		X: Axis{Label: "seconds", Format: func(v float64) string { return fmt.Sprintf("%gs", v) }, Max: 2.5},
		Y: Axis{Label: "heap", Format: func(v float64) string { return fmt.Sprintf("%g MiB", v/mib) }, Bytes: true},
		Series: []Series{
			{Name: "goal", Color: "#59a14f", Style: Step, Dashed: true, Points: []Point{{X: 0, Y: 4 * mib}, {X: 1, Y: 6 * mib}, {X: 2.5, Y: 6 * mib}}},
			{Name: "heap", Color: "#4e79a7", Style: Dots, Points: []Point{{X: 0.2, Y: 1 * mib, Tip: "first"}, {X: 1.4, Y: 5.5 * mib, Tip: "second"}}},
			{Name: "pauses", Color: "#e15759", Style: Stems, Points: []Point{{X: 0.9, Y: 2 * mib, Tip: "pause"}}},
			{Name: "live", Color: "#2ca02c", Points: []Point{{X: 0.5, Y: 2 * mib}, {X: 2, Y: 3 * mib}}},
		},
		Bands:      []Band{{From: 0.8, To: 1.1, Color: "#f2c14e", Tip: "GC 1"}},
		Marks:      []Mark{{X: 0.8, Width: 0.001, Color: "#e15759", Tip: "STW"}, {X: 1.1, Color: "#999"}},
		MarksLabel: "STW",
		Keys:       []Key{{Name: "GC cycle", Color: "#f2c14e", Faint: true}, {Name: "GC pause", Color: "#e15759"}},
	}
}

func TestChart_WriteSVG(t *testing.T) {
	var b bytes.Buffer
	if err := sample().WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, filepath.Join("testdata", "sample.svg"), b.Bytes())
}

func TestChart_WriteSVG_elements(t *testing.T) {
	tests := []struct {
		name     string
		chart    *Chart
		contains []string
		count    map[string]int
	}{
		{
			name:  "every element",
			chart: sample(),
			contains: []string{`id="sample" data-points="8"`, `aria-label="Heap &lt;and&gt; goal"`, ">Heap &lt;and&gt; goal</text>", ">3 GC cycles in 2.5s</text>",
				">0 MiB</text>", ">6 MiB</text>", ">0s</text>", ">2.5s</text>", `stroke-dasharray="5 3"`, "<title>GC 1</title>", ">STW</text>",
				">GC cycle</text>", ">GC pause</text>", ">heap</text>", ">seconds</text>"},
			count: map[string]int{"<circle": 2, `<line class="stem"`: 1, `<rect class="mark"`: 2, `<rect class="band"`: 1, "<polyline": 3},
		},
		{
			name: "one series draws no legend and no title",
			chart: &Chart{Label: "GC pauses", Width: 720, Height: 260, X: Axis{Max: 10},
				Series: []Series{{Name: "pauses", Color: "#c62828", Style: Stems, Points: []Point{{X: 1, Y: 0.002}, {X: 4, Y: 0.001}}}}},
			contains: []string{`aria-label="GC pauses"`, `viewBox="0 0 720 260"`, ">10</text>", ">0.002</text>"},
			count:    map[string]int{`<line class="stem"`: 2, "<circle": 0, "font-weight": 0, ">pauses</text>": 0},
		},
		{
			name:     "empty",
			chart:    &Chart{Title: "nothing"},
			contains: []string{">0</text>", ">1</text>", "</svg>\n"},
			count:    map[string]int{"<polyline": 0},
		},
		{
			name: "tight x axis starts near its data",
			chart: &Chart{X: Axis{Tight: true},
				Series: []Series{{Color: "#000", Points: []Point{{X: 103, Y: 1}, {X: 161, Y: 2}}}}},
			contains: []string{">100</text>", ">170</text>"},
			count:    map[string]int{">0</text>": 1}, // the y axis' only
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.chart.WriteSVG(&b); err != nil {
				t.Fatal(err)
			}
			got := b.String()
			if !strings.HasPrefix(got, "<svg ") {
				t.Errorf("does not start with <svg: %.60s", got)
			}
			for _, s := range tt.contains {
				if !strings.Contains(got, s) {
					t.Errorf("lacks %q:\n%s", s, got)
				}
			}
			for s, n := range tt.count {
				if c := strings.Count(got, s); c != n {
					t.Errorf("%d × %q, want %d:\n%s", c, s, n, got)
				}
			}
		})
	}
}

// TestChart_Spark: a sparkline is its series alone, filling its box over
// the x range it is given: no text, axes or grid.
func TestChart_Spark(t *testing.T) {
	c := Chart{Spark: true, Width: 160, Height: 32, Label: "3 points", X: Axis{Min: 0, Max: 100},
		Series: []Series{{Color: "#4e79a7", Points: []Point{{X: 0, Y: 10}, {X: 50, Y: 30}, {X: 100, Y: 20}}}}}
	var b strings.Builder
	if err := c.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if !strings.Contains(svg, `class="sparkline" width="160" height="32"`) || !strings.Contains(svg, `aria-label="3 points"`) {
		t.Errorf("sparkline element: %s", svg)
	}
	if !strings.Contains(svg, `points="0.0,30.0 80.0,2.0 160.0,16.0"`) {
		t.Errorf("sparkline points: %s\nwant the first at the left and the bottom, the highest at the top, the last at the right", svg)
	}
	for _, part := range []string{"<text", `class="tick"`, `class="grid"`, `class="axis"`} {
		if strings.Contains(svg, part) {
			t.Errorf("a sparkline with %s: %s", part, svg)
		}
	}
	one := Chart{Spark: true, Width: 160, Height: 32, X: Axis{Min: 0, Max: 100}, Series: []Series{{Style: Dots, Points: []Point{{X: 50, Y: 7}}}}}
	b.Reset()
	one.WriteSVG(&b)
	if !strings.Contains(b.String(), `<circle class="dot" cx="80.0" cy="16.0"`) {
		t.Errorf("a sparkline of one point: %s, want a dot in the middle", b.String())
	}
}
