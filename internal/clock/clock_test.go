package clock

import (
	"context"
	"testing"
	"time"
)

func TestSleepUntil(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		in   time.Duration
		want bool
		most time.Duration
	}{
		{"a time to come", live, 30 * time.Millisecond, true, time.Second},
		{"a time past", live, -time.Second, true, 10 * time.Millisecond},
		{"ended before", ended, time.Hour, false, 10 * time.Millisecond},
		{"ended, a time past", ended, -time.Second, false, 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			if got := SleepUntil(tt.ctx, start.Add(tt.in), time.Now); got != tt.want {
				t.Errorf("SleepUntil = %v, want %v", got, tt.want)
			}
			if d := time.Since(start); d > tt.most || (tt.want && tt.in > 0 && d < tt.in) {
				t.Errorf("took %s for a time %s away", d, tt.in)
			}
		})
	}
}
