package diagnose

import (
	"testing"

	"github.com/google/pprof/profile"
)

func TestStackHasher(t *testing.T) {
	fill := &profile.Function{ID: 1, Name: "main.fill", Filename: "/src/main.go"}
	serve := &profile.Function{ID: 2, Name: "main.serve", Filename: "/src/main.go"}
	loc := func(id uint64, lines ...profile.Line) *profile.Location {
		return &profile.Location{ID: id, Line: lines}
	}
	stack := func(locs ...*profile.Location) *profile.Sample { return &profile.Sample{Location: locs} }
	fill12, serve40, serve41 := profile.Line{Function: fill, Line: 12}, profile.Line{Function: serve, Line: 40}, profile.Line{Function: serve, Line: 41}

	tests := []struct {
		name string
		a, b *profile.Sample
		same bool
	}{
		{"the same frames under other location IDs", stack(loc(1, fill12), loc(2, serve40)), stack(loc(7, fill12), loc(9, serve40)), true},
		{"an inlined call split into locations differently", stack(loc(1, fill12, serve40)), stack(loc(3, fill12), loc(4, serve40)), true},
		{"another line", stack(loc(1, fill12), loc(2, serve40)), stack(loc(1, fill12), loc(2, serve41)), false},
		{"the frames in another order", stack(loc(1, fill12), loc(2, serve40)), stack(loc(2, serve40), loc(1, fill12)), false},
		{"a frame more", stack(loc(1, fill12)), stack(loc(1, fill12), loc(2, serve40)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sh := newStackHasher()
			if got := sh.stack(tt.a) == sh.stack(tt.b); got != tt.same {
				t.Errorf("same hash = %v, want %v", got, tt.same)
			}
		})
	}
}
