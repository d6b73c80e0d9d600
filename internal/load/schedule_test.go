package load

import (
	"testing"
	"time"
)

func TestSchedule_At(t *testing.T) {
	tests := []struct {
		name  string
		sched Schedule
		at    map[uint64]time.Duration
	}{
		{name: "constant rate", sched: Schedule{Rate: 4}, at: map[uint64]time.Duration{
			0: 0, 1: 250 * time.Millisecond, 2: 500 * time.Millisecond, 400: 100 * time.Second,
		}},
		{name: "rate that does not divide a second", sched: Schedule{Rate: 3}, at: map[uint64]time.Duration{
			1: 333333333, 2: 666666667, 3: time.Second, 3000000: 1000000 * time.Second,
		}},
		{name: "below one per second", sched: Schedule{Rate: 0.25}, at: map[uint64]time.Duration{1: 4 * time.Second, 5: 20 * time.Second}},
		// 100/s reached over 2s: Rate·t²/(2·Ramp) = 25t² requests by t
		// during the ramp, 100 after it (100 by 2s).
		{name: "ramp", sched: Schedule{Rate: 100, Ramp: 2 * time.Second}, at: map[uint64]time.Duration{
			0: 0, 1: 200 * time.Millisecond, 25: time.Second, 64: 1600 * time.Millisecond,
			100: 2 * time.Second, 101: 2010 * time.Millisecond, 200: 3 * time.Second,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, want := range tt.at {
				if got := tt.sched.At(i); got != want {
					t.Errorf("At(%d) = %s, want %s", i, got, want)
				}
			}
		})
	}
}

func TestSchedule_Count(t *testing.T) {
	scheds := []Schedule{
		{Rate: 1}, {Rate: 3}, {Rate: 7.5}, {Rate: 1000}, {Rate: 0.1},
		{Rate: 100, Ramp: 2 * time.Second}, {Rate: 33, Ramp: 1500 * time.Millisecond}, {Rate: 50000, Ramp: time.Second},
	}
	ds := []time.Duration{0, 1, time.Millisecond, 333333333, 333333334, time.Second, 1500 * time.Millisecond, 2 * time.Second, 10 * time.Second}
	for _, s := range scheds {
		// Count(d) is the number of requests due strictly before d.
		for _, d := range ds {
			n := s.Count(d)
			if n > 0 && s.At(n-1) >= d {
				t.Errorf("%+v: Count(%s) = %d, but request %d is due at %s", s, d, n, n-1, s.At(n-1))
			}
			if s.At(n) < d {
				t.Errorf("%+v: Count(%s) = %d, but request %d is due at %s, before", s, d, n, n, s.At(n))
			}
		}
		// At never goes back.
		for i := range uint64(5000) {
			if s.At(i+1) < s.At(i) {
				t.Fatalf("%+v: At(%d) = %s after At(%d) = %s", s, i+1, s.At(i+1), i, s.At(i))
			}
		}
	}
}
