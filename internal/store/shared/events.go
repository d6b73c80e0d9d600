package shared

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heapscope/heapscope/internal/store"
)

// AddEvent stores one of a target's availability events.
func (s *Store) AddEvent(e store.TargetEvent) error {
	if err := store.CheckEvent(e); err != nil {
		return err
	}
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tid, err := targetID(ctx, tx, e.Target)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "INSERT INTO events (target_id, time_ns, kind, detail) VALUES ($1, $2, $3, $4)", tid, e.Time.UnixNano(), e.Kind, e.Detail)
		return err
	})
	if err != nil {
		return fmt.Errorf("add %s event of %s: %w", e.Kind, e.Target, oneLine{err})
	}
	return nil
}

// Events returns the availability events a query selects (its Target,
// Since, Until and Limit), newest first.
func (s *Store) Events(q store.Query) ([]store.TargetEvent, error) {
	var f filter
	if q.Target != "" {
		f.add("t.key = ?", q.Target)
	}
	if !q.Since.IsZero() {
		f.add("v.time_ns >= ?", q.Since.UnixNano())
	}
	if !q.Until.IsZero() {
		f.add("v.time_ns < ?", q.Until.UnixNano())
	}
	rows, err := s.pool.Query(context.Background(), "SELECT t.key, v.time_ns, v.kind, v.detail FROM events v JOIN targets t ON t.id = v.target_id"+
		f.sql()+" ORDER BY v.time_ns DESC, v.id DESC"+limitSQL(q.Limit), f.args...)
	if err != nil {
		return nil, fmt.Errorf("events: %w", oneLine{err})
	}
	defer rows.Close()
	out := []store.TargetEvent{}
	for rows.Next() {
		var e store.TargetEvent
		var ns int64
		if err := rows.Scan(&e.Target, &ns, &e.Kind, &e.Detail); err != nil {
			return nil, fmt.Errorf("events: %w", oneLine{err})
		}
		e.Time = time.Unix(0, ns).UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("events: %w", oneLine{err})
	}
	return out, nil
}
