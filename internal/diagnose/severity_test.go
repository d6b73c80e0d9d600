package diagnose

import (
	"math"
	"testing"
)

func TestLevelWithin(t *testing.T) {
	tests := []struct {
		name string
		v    float64
		want Severity
	}{
		{name: "below high", v: 0.5, want: High},
		{name: "at high", v: 1, want: High},
		{name: "between", v: 3, want: Medium},
		{name: "at medium", v: 5, want: Medium},
		{name: "above medium", v: 5.5, want: Info},
		{name: "not a number", v: math.NaN(), want: Info},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := levelWithin(tt.v, 1, 5); got != tt.want {
				t.Errorf("levelWithin(%g, 1, 5) = %s, want %s", tt.v, got, tt.want)
			}
		})
	}
}
