package trigger

import (
	"testing"
	"time"
)

func TestDetectRestart(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	proc := func(pid int, start time.Time) Sample {
		return Sample{Known: KnownPID | KnownStart, PID: pid, Start: start}
	}
	withKills := func(s Sample, cgroup string, kills uint64) Sample {
		s.Known |= KnownOOMKills
		s.Cgroup, s.OOMKills = cgroup, kills
		return s
	}
	const cg = "/sys/fs/cgroup/memory/app"
	tests := []struct {
		name      string
		prev, cur Sample
		restarted bool
		kills     uint64
		reason    string
	}{
		{name: "same process", prev: proc(42, start), cur: proc(42, start)},
		{name: "boot time moved by a second", prev: proc(42, start), cur: proc(42, start.Add(time.Second))},
		{
			name: "new pid", prev: proc(42, start), cur: proc(57, start.Add(time.Hour)),
			restarted: true, reason: "pid 42 gone, pid 57 serving",
		},
		{
			name: "same pid, new start", prev: proc(42, start), cur: proc(42, start.Add(time.Minute)),
			restarted: true, reason: "process start time changed from 2026-03-01T12:00:00Z to 2026-03-01T12:01:00Z",
		},
		{
			name: "start time only (remote)", prev: Sample{Known: KnownStart, Start: start}, cur: Sample{Known: KnownStart, Start: start.Add(time.Hour)},
			restarted: true, reason: "process start time changed from 2026-03-01T12:00:00Z to 2026-03-01T13:00:00Z",
		},
		{name: "nothing known", prev: Sample{PID: 42}, cur: Sample{PID: 57}},
		{name: "pid known once", prev: proc(42, start), cur: Sample{Known: KnownPID, PID: 42}},
		{
			name: "restart after an OOM kill", prev: withKills(proc(42, start), cg, 2), cur: withKills(proc(57, start.Add(time.Minute)), cg, 3),
			restarted: true, kills: 1, reason: "pid 42 gone, pid 57 serving; 1 OOM kill in " + cg,
		},
		{
			name: "OOM kills with no restart", prev: withKills(proc(42, start), cg, 0), cur: withKills(proc(42, start), cg, 2),
			kills: 2, reason: "2 OOM kills in " + cg,
		},
		{
			name: "counter of another cgroup", prev: withKills(proc(42, start), cg, 0), cur: withKills(proc(57, start.Add(time.Minute)), cg+"2", 1),
			restarted: true, reason: "pid 42 gone, pid 57 serving",
		},
		{
			name: "counter unknown before", prev: proc(42, start), cur: withKills(proc(42, start), cg, 1),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := DetectRestart(tt.prev, tt.cur)
			if r.Restarted != tt.restarted || r.OOMKills != tt.kills || r.Reason != tt.reason || r.OOMKilled() != (tt.kills > 0) {
				t.Errorf("DetectRestart = %+v, want restarted %v, %d kills, %q", r, tt.restarted, tt.kills, tt.reason)
			}
		})
	}
}
