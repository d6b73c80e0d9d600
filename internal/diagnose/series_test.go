package diagnose

import (
	"math"
	"testing"
)

func TestSeries_classify(t *testing.T) {
	s := DefaultThresholds().Leak.Series
	tests := []struct {
		name string
		ys   []float64
		want verdict
	}{
		{"steady growth", []float64{100, 200, 300, 400, 500}, steady},
		{"steady growth with noise", []float64{100, 210, 290, 410, 495, 610}, steady},
		{"steady growth over three snapshots", []float64{100, 160, 230}, steady},
		{"warm-up then flat", []float64{100, 500, 510, 505, 508, 506}, warmUp},
		{"warm-up then flat, three snapshots", []float64{100, 500, 502}, warmUp},
		{"sawtooth of an evicting cache", []float64{100, 300, 120, 310, 110, 305, 115}, sawtooth},
		{"rising sawtooth", []float64{100, 300, 150, 350, 200, 400, 250}, sawtooth},
		{"noise around a level", []float64{500, 530, 480, 520, 490, 515, 495}, noise},
		{"flat", []float64{500, 500, 500, 500}, flat},
		{"shrinking", []float64{500, 400, 300}, flat},
		{"too short", []float64{100, 200}, tooShort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			xs := make([]float64, len(tt.ys))
			for i := range xs {
				xs[i] = float64(i) * 0.5
			}
			tr := fitTrend(xs, tt.ys)
			if got := s.classify(tr, 50); got != tt.want {
				t.Errorf("classify(%v) = %s, want %s (slope %.1f, R² %.2f, rising %.2f, late slope %.1f)",
					tt.ys, got, tt.want, tr.slope, tr.r2, tr.rising, tr.lateSlope)
			}
		})
	}
}

func TestFitLine(t *testing.T) {
	tests := []struct {
		name      string
		xs, ys    []float64
		slope, r2 float64
	}{
		{"exact line", []float64{0, 1, 2, 3}, []float64{5, 7, 9, 11}, 2, 1},
		{"flat", []float64{0, 1, 2}, []float64{4, 4, 4}, 0, 0},
		{"no spread in x", []float64{1, 1, 1}, []float64{1, 2, 3}, 0, 0},
		{"one point", []float64{1}, []float64{1}, 0, 0},
		// ys = 0, 2, 1: slope 0.5, R² = 0.25.
		{"scatter", []float64{0, 1, 2}, []float64{0, 2, 1}, 0.5, 0.25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slope, r2 := FitLine(tt.xs, tt.ys)
			if math.Abs(slope-tt.slope) > 1e-9 || math.Abs(r2-tt.r2) > 1e-9 {
				t.Errorf("FitLine = %g, %g; want %g, %g", slope, r2, tt.slope, tt.r2)
			}
		})
	}
}
