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

// FuzzPauses checks Pauses on any pair of cycle counts: it never lists
// more than the ring holds, lists as many pauses as NewWindow covers, and
// lists the window's last cycles in order with their ring entries.
func FuzzPauses(f *testing.F) {
	f.Add(uint32(40), uint32(41), uint32(0), uint32(0))
	f.Add(uint32(10), uint32(600), uint32(2), uint32(5))
	f.Add(uint32(0), uint32(256), uint32(0), uint32(1))
	f.Add(uint32(600), uint32(10), uint32(0), uint32(0))
	f.Add(uint32(4294967000), uint32(4294967295), uint32(1), uint32(3))
	f.Fuzz(func(t *testing.T, startGC, endGC, startForced, endForced uint32) {
		start := MemStats{NumGC: startGC, NumForcedGC: startForced}
		end := MemStats{NumGC: endGC, NumForcedGC: endForced}
		for i := range PauseRingSize {
			end.PauseNs[i] = uint64(i) + 1
			end.PauseEnd[i] = uint64(i) * 1e9
		}
		ps := Pauses(start, end)
		if len(ps) > PauseRingSize {
			t.Fatalf("%d pauses, more than the ring's %d", len(ps), PauseRingSize)
		}
		if w := NewWindow(start, end, time.Second); len(ps) != w.PausesCovered {
			t.Fatalf("%d pauses listed, the window covers %d", len(ps), w.PausesCovered)
		}
		for i, p := range ps {
			cycle := endGC - uint32(len(ps)-1-i)
			if p.Cycle != cycle || p.Duration != time.Duration((cycle-1)%PauseRingSize+1) {
				t.Fatalf("pause %d is of cycle %d (%s), want cycle %d", i, p.Cycle, p.Duration, cycle)
			}
		}
	})
}
