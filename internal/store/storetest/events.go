package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/store"
)

// testEvents: availability events come back newest first, by target and
// range, within a limit; an unknown kind or a missing time is refused;
// retention by age removes the old ones.
func testEvents(t *testing.T, open Opener) {
	s := open(t)
	add := []store.TargetEvent{
		{Target: "a", Time: At(1), Kind: store.EventDown, Detail: "connection refused"},
		{Target: "b", Time: At(2), Kind: store.EventRestart, Detail: "pid 10 → 11"},
		{Target: "a", Time: At(3), Kind: store.EventUp},
		{Target: "a", Time: At(5), Kind: store.EventOOMKill, Detail: "oom_kill 1 → 2"},
		{Target: "a", Time: At(6), Kind: store.EventDown, Detail: "connection refused"},
	}
	for _, e := range add {
		if err := s.AddEvent(e); err != nil {
			t.Fatal(err)
		}
	}
	kinds := func(es []store.TargetEvent) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Target+":"+e.Kind+"@"+e.Time.Sub(At(0)).String())
		}
		return out
	}
	tests := []struct {
		name string
		q    store.Query
		want []string
	}{
		{"every event, newest first", store.Query{}, []string{"a:down@6m0s", "a:oom_kill@5m0s", "a:up@3m0s", "b:restart@2m0s", "a:down@1m0s"}},
		{"one target", store.Query{Target: "b"}, []string{"b:restart@2m0s"}},
		{"a range", store.Query{Target: "a", Since: At(3), Until: At(6)}, []string{"a:oom_kill@5m0s", "a:up@3m0s"}},
		{"the newest two", store.Query{Target: "a", Limit: 2}, []string{"a:down@6m0s", "a:oom_kill@5m0s"}},
	}
	for _, tt := range tests {
		got, err := s.Events(tt.q)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !slices.Equal(kinds(got), tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, kinds(got), tt.want)
		}
	}
	all, _ := s.Events(store.Query{Target: "a", Limit: 1})
	if len(all) != 1 || all[0].Detail != "connection refused" || !all[0].Time.Equal(At(6)) {
		t.Errorf("the newest event of a: %+v, want its detail and time as added", all)
	}
	if e, down := store.Down(all); !down || !e.Time.Equal(At(6)) {
		t.Errorf("Down: %+v %v, want down since 12:06", e, down)
	}

	for _, bad := range []store.TargetEvent{
		{Target: "a", Time: At(7), Kind: "exploded"},
		{Target: "a", Kind: store.EventUp},
		{Time: At(7), Kind: store.EventUp},
	} {
		if err := s.AddEvent(bad); err == nil {
			t.Errorf("AddEvent(%+v) took it", bad)
		}
	}

	if _, err := s.Retain(store.Retention{MaxAge: 36 * time.Minute, Now: At(40)}); err != nil {
		t.Fatal(err)
	}
	left, err := s.Events(store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kinds(left), []string{"a:down@6m0s", "a:oom_kill@5m0s"}) {
		t.Errorf("after keeping 36 minutes to 12:40: %v, want the events from 12:04 on", kinds(left))
	}
}
