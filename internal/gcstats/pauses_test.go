package gcstats

import (
	"testing"
	"time"
)

// withEnds sets the pause ring's end times: cycle n ends n seconds after
// base.
func withEnds(m MemStats, base time.Time) MemStats {
	for n := m.NumGC; n > 0 && m.NumGC-n < PauseRingSize; n-- {
		m.PauseEnd[(n-1)%PauseRingSize] = uint64(base.Add(time.Duration(n) * time.Second).UnixNano())
	}
	return m
}

func TestPauses(t *testing.T) {
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		start, end  MemStats
		first, last uint32 // cycles expected, 0 and 0 for none
	}{
		{name: "no cycles", start: snapshot(40, 0, micro), end: snapshot(40, 0, micro)},
		{name: "one cycle", start: snapshot(40, 0, micro), end: snapshot(41, 0, micro), first: 41, last: 41},
		{name: "ring wrapped before the window", start: snapshot(1000, 0, micro), end: snapshot(1200, 0, micro), first: 1001, last: 1200},
		{name: "more cycles than the ring holds", start: snapshot(10, 0, micro), end: snapshot(600, 0, micro), first: 345, last: 600},
		{name: "target restarted", start: snapshot(600, 0, micro), end: snapshot(10, 0, micro)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Pauses(tt.start, withEnds(tt.end, base))
			if tt.first == 0 {
				if len(got) != 0 {
					t.Fatalf("got %d pauses, want none", len(got))
				}
				return
			}
			if want := int(tt.last - tt.first + 1); len(got) != want {
				t.Fatalf("got %d pauses, want %d", len(got), want)
			}
			for i, p := range got {
				cycle := tt.first + uint32(i)
				if p.Cycle != cycle {
					t.Fatalf("pause %d is of cycle %d, want %d", i, p.Cycle, cycle)
				}
				if want := time.Duration(micro(cycle)); p.Duration != want {
					t.Errorf("cycle %d paused %s, want %s", cycle, p.Duration, want)
				}
				if want := base.Add(time.Duration(cycle) * time.Second); !p.End.Equal(want) {
					t.Errorf("cycle %d ended %s, want %s", cycle, p.End, want)
				}
			}
		})
	}
}
