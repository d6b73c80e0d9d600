package problem

import (
	"fmt"
	"time"
)

// The healths of a target, from best to worst.
const (
	HealthOK       = "ok"       // captured, nothing open
	HealthUnknown  = "unknown"  // nothing captured yet
	HealthDegraded = "degraded" // the collector's trouble: a partial capture, a trigger that cannot fire
	HealthProblem  = "problem"  // an open problem of medium or above
	HealthDown     = "down"     // its captures fail
)

var healthRank = map[string]int{HealthOK: 0, HealthUnknown: 1, HealthDegraded: 2, HealthProblem: 3, HealthDown: 4}

// Signals are what a target's health is made of: its problems, its last
// capture, and what its watcher knows (zero values when no watcher
// says).
type Signals struct {
	// Problems are the target's, as Find gives them.
	Problems []Problem
	// Captured says whether anything of the target is stored; Partial
	// whether its newest capture is partial, and BeforeOOM whether it is
	// the last before an OOM kill (nothing captured since).
	Captured, Partial, BeforeOOM bool
	Last                         time.Time
	// Failures is how many captures in a row failed, LastError the last
	// one's error.
	Failures  int
	LastError string
	// DownSince is when the target went down, as its stored events say,
	// when it has not come back since; DownDetail is what was seen then.
	// A server without the watcher's own figures reads it.
	DownSince  time.Time
	DownDetail string
	// Unarmed are the triggers that can never fire on the target, each
	// with why.
	Unarmed []string
}

// Status is a target's health with its reasons, the worst first, and
// its worst open problem.
type Status struct {
	Health  string   `json:"health"`
	Reasons []string `json:"reasons,omitempty"`
	Top     *Problem `json:"top_problem,omitempty"`
}

// HealthOf makes the health of a target the worst of its signals: a
// target whose captures fail is down; one with an open problem of medium
// or above has a problem (a green "ok" on a leaking service is the
// failure this exists for); a partial capture or a trigger that cannot
// fire degrades it; nothing stored is unknown.
func HealthOf(s Signals) Status {
	st := Status{Health: HealthOK}
	worse := func(h, reason string) {
		if healthRank[h] > healthRank[st.Health] {
			st.Health = h
			st.Reasons = append([]string{reason}, st.Reasons...)
			return
		}
		st.Reasons = append(st.Reasons, reason)
	}
	if !s.Captured {
		worse(HealthUnknown, "nothing captured yet")
	}
	switch {
	case s.Failures > 0:
		worse(HealthDown, fmt.Sprintf("%d capture%s failed in a row: %s", s.Failures, plural(s.Failures), s.LastError))
	case !s.DownSince.IsZero():
		worse(HealthDown, "down since "+s.DownSince.UTC().Format(time.RFC3339)+": "+s.DownDetail)
	}
	for i, p := range s.Problems {
		if p.State == Resolved || Rank(p.Severity) < Rank("medium") {
			continue
		}
		if st.Top == nil || Rank(p.Severity) > Rank(st.Top.Severity) {
			st.Top = &s.Problems[i]
		}
	}
	if st.Top != nil {
		worse(HealthProblem, fmt.Sprintf("%s problem: %s", st.Top.Severity, st.Top.Headline()))
	}
	for _, p := range s.Problems {
		if p.Unconfirmed && p.State.Active() {
			st.Reasons = append(st.Reasons, "unconfirmed until the next capture: "+p.Headline())
		}
	}
	if s.BeforeOOM {
		worse(HealthDown, "OOM-killed after its last capture ("+s.Last.UTC().Format(time.RFC3339)+"), not captured since")
	}
	if s.Partial {
		worse(HealthDegraded, "its last capture is partial")
	}
	for _, u := range s.Unarmed {
		worse(HealthDegraded, "trigger "+u)
	}
	return st
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
