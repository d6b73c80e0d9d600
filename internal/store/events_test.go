package store

import (
	"testing"
	"time"
)

func TestDown(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	tests := []struct {
		name      string
		events    []TargetEvent // newest first
		down      bool
		downSince time.Time
	}{
		{"no event", nil, false, time.Time{}},
		{"down, never up", []TargetEvent{{Kind: EventRestart, Time: at(3)}, {Kind: EventDown, Time: at(2)}}, true, at(2)},
		{"down, then up", []TargetEvent{{Kind: EventUp, Time: at(3)}, {Kind: EventDown, Time: at(2)}}, false, time.Time{}},
		{"up, then down again", []TargetEvent{{Kind: EventDown, Time: at(5)}, {Kind: EventUp, Time: at(3)}, {Kind: EventDown, Time: at(2)}}, true, at(5)},
		{"restarts only", []TargetEvent{{Kind: EventOOMKill, Time: at(5)}, {Kind: EventRestart, Time: at(3)}}, false, time.Time{}},
	}
	for _, tt := range tests {
		e, down := Down(tt.events)
		if down != tt.down || !e.Time.Equal(tt.downSince) {
			t.Errorf("%s: Down = %v, %v; want down at %v, %v", tt.name, e, down, tt.downSince, tt.down)
		}
	}
}
