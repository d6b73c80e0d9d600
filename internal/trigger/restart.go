package trigger

import (
	"fmt"
	"time"
)

// startTolerance is how far two start times of one process may differ:
// the boot time they are computed from moves when the clock is adjusted,
// and process_start_time_seconds is rounded.
const startTolerance = time.Second

// Restart is what changed between two samples of one target: whether its
// process is a new one, and whether the OOM killer struck in between.
type Restart struct {
	// Restarted reports that the later sample is of another process: a
	// new PID serves the target, or the process's start time changed.
	Restarted bool
	// OOMKills is how much the cgroup's OOM-kill counter rose between the
	// samples, when both know it for the same cgroup. A kill with no
	// restart is possible: another process of the cgroup was killed, or
	// the target has not come back yet (the next sample fails).
	OOMKills uint64
	// Reason says what showed it, for a log line: "pid 42 gone, pid 57
	// serving; 1 OOM kill in /sys/fs/cgroup/memory/app". "" when nothing
	// changed.
	Reason string
}

// OOMKilled reports whether the OOM killer killed a process of the
// target's cgroup between the samples.
func (r Restart) OOMKilled() bool { return r.OOMKills > 0 }

// DetectRestart compares two consecutive samples of one target, prev
// taken before cur. A restart needs both samples to know the PID, or both
// the start time; an OOM kill needs both to know the counter of the same
// cgroup (a cgroup made anew for the new process, as Kubernetes makes one
// per container, restarts its count: the kill is then not seen here).
func DetectRestart(prev, cur Sample) Restart {
	var r Restart
	switch {
	case prev.Has(KnownPID) && cur.Has(KnownPID) && prev.PID != cur.PID:
		r.Restarted = true
		r.Reason = fmt.Sprintf("pid %d gone, pid %d serving", prev.PID, cur.PID)
	case prev.Has(KnownStart) && cur.Has(KnownStart) && cur.Start.Sub(prev.Start).Abs() > startTolerance:
		r.Restarted = true
		r.Reason = fmt.Sprintf("process start time changed from %s to %s",
			prev.Start.UTC().Format(time.RFC3339), cur.Start.UTC().Format(time.RFC3339))
	}
	if prev.Has(KnownOOMKills) && cur.Has(KnownOOMKills) && prev.Cgroup == cur.Cgroup && cur.OOMKills > prev.OOMKills {
		r.OOMKills = cur.OOMKills - prev.OOMKills
		kills := "OOM kill"
		if r.OOMKills > 1 {
			kills += "s"
		}
		in := ""
		if cur.Cgroup != "" {
			in = " in " + cur.Cgroup
		}
		note := fmt.Sprintf("%d %s%s", r.OOMKills, kills, in)
		if r.Reason != "" {
			r.Reason += "; " + note
		} else {
			r.Reason = note
		}
	}
	return r
}
