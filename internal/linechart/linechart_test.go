package linechart

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

func TestNiceStep(t *testing.T) {
	tests := []struct{ raw, want float64 }{
		{0.3, 0.5}, {1, 1}, {1.1, 2}, {3, 5}, {7, 10}, {12, 20}, {0, 1}, {-4, 1},
	}
	for _, tt := range tests {
		if got := niceStep(tt.raw); got != tt.want {
			t.Errorf("niceStep(%v) = %v, want %v", tt.raw, got, tt.want)
		}
	}
}

func TestChart_SVG(t *testing.T) {
	tests := []struct {
		name       string
		chart      Chart
		polylines  int
		wantPoints []string // substrings of the points attributes
	}{
		{name: "empty", chart: Chart{Title: "nothing"}},
		{
			name:      "one point",
			chart:     Chart{Series: []Series{{Name: "a", Color: "#000", Points: []Point{{X: 3, Y: 5}}}}},
			polylines: 1,
		},
		{
			name: "step holds the value",
			chart: Chart{Width: 200, Height: 200, Series: []Series{{Name: "<goal>", Color: "#f00", Step: true,
				Points: []Point{{X: 0, Y: 10}, {X: 1, Y: 0}}}}},
			polylines: 1,
			// plot 100×90 px: (0,10) top left, held to x=1 before falling.
			wantPoints: []string{"80.0,40.0 180.0,40.0 180.0,130.0"},
		},
		{
			name:  "marks only",
			chart: Chart{Marks: []Mark{{X: 1, Color: "red", Title: "gc 1 & more"}, {X: 2, Color: "red"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.chart.SVG(&buf); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			// Well-formed XML, whatever the names hold.
			dec := xml.NewDecoder(strings.NewReader(out))
			for {
				if _, err := dec.Token(); err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("not XML: %v\n%s", err, out)
				}
			}
			if n := strings.Count(out, "<polyline"); n != tt.polylines {
				t.Errorf("%d polylines, want %d", n, tt.polylines)
			}
			if n := strings.Count(out, `stroke-width="1.5"><title>`); n != len(tt.chart.Marks) {
				t.Errorf("%d marks, want %d", n, len(tt.chart.Marks))
			}
			for _, p := range tt.wantPoints {
				if !strings.Contains(out, p) {
					t.Errorf("no %q in\n%s", p, out)
				}
			}
		})
	}
}
