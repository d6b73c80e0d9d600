package diagnose

import (
	"strings"
	"testing"
	"time"
)

func TestLongTermGrowth(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	series := func(n int, every time.Duration, at func(i int) float64) []LongTermPoint {
		ps := make([]LongTermPoint, n)
		for i := range ps {
			ps[i] = LongTermPoint{Time: t0.Add(time.Duration(i) * every), Bytes: at(i)}
		}
		return ps
	}
	const mib = 1 << 20
	tests := []struct {
		name      string
		points    []LongTermPoint
		limit     float64
		want      bool
		severity  string
		titleHas  string
		toLimitHr float64
	}{
		{"steady growth over a day", series(96, 15*time.Minute, func(i int) float64 { return 100*mib + float64(i)*mib }), 0,
			true, "medium", "4.0 MiB an hour", 0},
		{"reaches the limit within a day", series(96, 15*time.Minute, func(i int) float64 { return 100*mib + float64(i)*mib }), 250 * mib,
			true, "high", "reaches the 250 MiB limit", (250 - 195) / 4.0},
		{"flat with noise", series(96, 15*time.Minute, func(i int) float64 { return 100*mib + float64(i%3)*mib }), 0,
			false, "", "", 0},
		{"too few runs", series(5, time.Hour, func(i int) float64 { return 100*mib + float64(i)*10*mib }), 0,
			false, "", "", 0},
		{"too short a span", series(20, time.Minute, func(i int) float64 { return 100*mib + float64(i)*mib }), 0,
			false, "", "", 0},
		{"growth too small to matter", series(96, 15*time.Minute, func(i int) float64 { return 100*mib + float64(i)*1000 }), 0,
			false, "", "", 0},
		{"a restart starts the series again", append(
			series(10, time.Hour, func(i int) float64 { return 100*mib + float64(i)*20*mib }),
			series(3, time.Hour, func(i int) float64 { return 10 * mib })[0:3]...), 0,
			false, "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ok := LongTermGrowth(tt.points, tt.limit)
			if ok != tt.want {
				t.Fatalf("LongTermGrowth found = %v (%s), want %v", ok, f.Title, tt.want)
			}
			if !ok {
				return
			}
			if f.Severity != tt.severity || !strings.Contains(f.Title, tt.titleHas) {
				t.Errorf("finding = %s %q, want %s with %q", f.Severity, f.Title, tt.severity, tt.titleHas)
			}
			if tt.toLimitHr > 0 {
				if got := f.Evidence["hours_to_limit"]; got < tt.toLimitHr*0.99 || got > tt.toLimitHr*1.01 {
					t.Errorf("hours_to_limit = %.2f, want %.2f", got, tt.toLimitHr)
				}
			}
		})
	}
}
