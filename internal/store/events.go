package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// The kinds of a target's availability events.
const (
	// EventDown: the target's captures began failing (watch says so after
	// a few in a row).
	EventDown = "down"
	// EventUp: a target that was down was captured again.
	EventUp = "up"
	// EventRestart: the target's process was replaced.
	EventRestart = "restart"
	// EventOOMKill: the kernel killed the target, or a process of its
	// cgroup, for lack of memory.
	EventOOMKill = "oom_kill"
)

// TargetEvent is what watch saw of a target's availability at a moment:
// that it went down, came back up, restarted, or was OOM-killed. Watch
// stores them as it sees them, so that pages and health say what
// happened between captures.
type TargetEvent struct {
	Target string    `json:"target"`
	Time   time.Time `json:"time"`
	// Kind is EventDown, EventUp, EventRestart or EventOOMKill.
	Kind string `json:"kind"`
	// Detail says what watch saw: the last error, the restart's reason.
	Detail string `json:"detail,omitempty"`
}

// CheckEvent refuses an event a store would not know how to show: one
// without a target or a time, or of an unknown kind. Every backend's
// AddEvent calls it first.
func CheckEvent(e TargetEvent) error {
	switch {
	case e.Target == "" || e.Time.IsZero():
		return fmt.Errorf("add event: %q event has no target or no time", e.Kind)
	case e.Kind != EventDown && e.Kind != EventUp && e.Kind != EventRestart && e.Kind != EventOOMKill:
		return fmt.Errorf("add event: kind %q: want %s, %s, %s or %s", e.Kind, EventDown, EventUp, EventRestart, EventOOMKill)
	}
	return nil
}

// Down reads a target's events, newest first: the event of its going
// down when it has not come back up since (its newest down event has no
// up event after it), else false.
func Down(events []TargetEvent) (TargetEvent, bool) {
	for _, e := range events {
		switch e.Kind {
		case EventUp:
			return TargetEvent{}, false
		case EventDown:
			return e, true
		}
	}
	return TargetEvent{}, false
}

// AddEvent stores one of a target's availability events.
func (s *Embedded) AddEvent(e TargetEvent) error {
	if err := CheckEvent(e); err != nil {
		return err
	}
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		tid, err := targetID(tx, e.Target)
		if err != nil {
			return err
		}
		_, err = tx.Exec("INSERT INTO events (target_id, time_ns, kind, detail) VALUES (?, ?, ?, ?)", tid, unixNano(e.Time), e.Kind, e.Detail)
		return err
	})
	if err != nil {
		return fmt.Errorf("add %s event of %s: %w", e.Kind, e.Target, err)
	}
	return nil
}

// Events returns the availability events a query selects (its Target,
// Since, Until and Limit), newest first.
func (s *Embedded) Events(q Query) ([]TargetEvent, error) {
	var f filter
	if q.Target != "" {
		f.add("t.key = ?", q.Target)
	}
	if !q.Since.IsZero() {
		f.add("v.time_ns >= ?", unixNano(q.Since))
	}
	if !q.Until.IsZero() {
		f.add("v.time_ns < ?", unixNano(q.Until))
	}
	rows, err := s.reader.Query("SELECT t.key, v.time_ns, v.kind, v.detail FROM events v JOIN targets t ON t.id = v.target_id"+
		f.sql()+" ORDER BY v.time_ns DESC, v.id DESC"+limitSQL(q.Limit), f.args...)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	defer rows.Close()
	out := []TargetEvent{}
	for rows.Next() {
		var e TargetEvent
		var ns int64
		if err := rows.Scan(&e.Target, &ns, &e.Kind, &e.Detail); err != nil {
			return nil, fmt.Errorf("events: %w", err)
		}
		e.Time = fromNano(ns)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	return out, nil
}
