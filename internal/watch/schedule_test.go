package watch

import (
	"fmt"
	"testing"
	"time"
)

func TestNextSlot(t *testing.T) {
	base := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		at     time.Time
		every  time.Duration
		offset time.Duration
		want   time.Time
	}{
		{"on a slot", base.Add(7 * time.Minute), 15 * time.Minute, 7 * time.Minute, base.Add(7 * time.Minute)},
		{"just after a slot", base.Add(7*time.Minute + time.Nanosecond), 15 * time.Minute, 7 * time.Minute, base.Add(22 * time.Minute)},
		{"before the offset", base, 15 * time.Minute, 7 * time.Minute, base.Add(7 * time.Minute)},
		{"no offset", base.Add(time.Second), time.Minute, 0, base.Add(time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NextSlot(tt.at, tt.every, tt.offset); !got.Equal(tt.want) {
				t.Errorf("NextSlot(%s, %s, %s) = %s, want %s", tt.at, tt.every, tt.offset, got, tt.want)
			}
		})
	}
}

func TestOffset_spreadsAndStays(t *testing.T) {
	every := 15 * time.Minute
	// 100 targets on one cadence land in at least 8 of the 10 tenths of
	// the period, and a key's offset is the same every time it is asked.
	tenths := map[int]bool{}
	for i := range 100 {
		key := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", 6000+i)
		o := Offset(key, every)
		if o < 0 || o >= every {
			t.Fatalf("Offset(%s) = %s, outside [0, %s)", key, o, every)
		}
		if o != Offset(key, every) {
			t.Fatalf("Offset(%s) is not stable", key)
		}
		tenths[int(o*10/every)] = true
	}
	if len(tenths) < 8 {
		t.Errorf("100 targets fell in %d tenths of the period, want at least 8", len(tenths))
	}
}
