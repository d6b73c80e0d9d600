package shared

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heapscope/heapscope/internal/store"
)

// entryColumns are the columns scanEntry reads, from entries e joined
// with targets t.
const entryColumns = `e.id, e.kind, t.key, e.time_ns, e.end_ns, e.path, e.status, e.bytes, e.scheduled, e.before_oom,
	e.labels, e.trigger_expr, e.trigger_value, e.trigger_threshold, e.trigger_unit, e.capture_seconds, e.load_rate, e.slot_ns`

const entriesFrom = " FROM entries e JOIN targets t ON t.id = e.target_id"

func scanEntry(row pgx.Row) (store.Entry, error) {
	var e store.Entry
	var kind string
	var ns, end int64
	var labels []byte
	var trigExpr, trigUnit *string
	var trigValue, trigThreshold, capture, load *float64
	var slot *int64
	if err := row.Scan(&e.ID, &kind, &e.Target, &ns, &end, &e.Path, &e.Status, &e.Bytes, &e.Scheduled, &e.BeforeOOM,
		&labels, &trigExpr, &trigValue, &trigThreshold, &trigUnit, &capture, &load, &slot); err != nil {
		return store.Entry{}, err
	}
	e.Kind, e.Time, e.End, e.LoadRate = store.Kind(kind), fromNano(ns), fromNano(end), deref(load)
	if slot != nil {
		e.Slot = fromNano(*slot)
		e.LateSeconds = store.Lateness(e)
	}
	if capture != nil {
		e.CaptureSeconds = *capture
	}
	if err := json.Unmarshal(labels, &e.Labels); err != nil {
		return store.Entry{}, fmt.Errorf("labels of %s: %w", e.Path, oneLine{err})
	}
	if len(e.Labels) == 0 {
		e.Labels = nil
	}
	if trigExpr != nil {
		e.Trigger = &store.Trigger{Expr: *trigExpr, Value: deref(trigValue), Threshold: deref(trigThreshold), Unit: derefString(trigUnit)}
	}
	return e, nil
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func fromNano(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// filter builds a WHERE clause with numbered parameters.
type filter struct {
	where []string
	args  []any
}

// add appends a condition whose parameters are written "?" in cond.
func (f *filter) add(cond string, args ...any) {
	for range args {
		f.args = append(f.args, nil)
		cond = strings.Replace(cond, "?", fmt.Sprintf("$%d", len(f.args)), 1)
	}
	copy(f.args[len(f.args)-len(args):], args)
	f.where = append(f.where, cond)
}

func (f *filter) sql() string {
	if len(f.where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(f.where, " AND ")
}

func limitSQL(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" LIMIT %d", n)
}

// History returns the runs, bundles and findings a query selects, each
// list newest first.
func (s *Store) History(q store.Query) (store.History, error) {
	ctx := context.Background()
	h := store.History{}
	var err error
	if h.Runs, err = s.entries(ctx, q, store.KindRun); err != nil {
		return store.History{}, err
	}
	if h.Bundles, err = s.entries(ctx, q, store.KindBundle); err != nil {
		return store.History{}, err
	}
	if h.Findings, err = s.findings(ctx, q); err != nil {
		return store.History{}, err
	}
	return h, nil
}

func labelsJSON(labels map[string]string) string {
	data, _ := json.Marshal(labels)
	return string(data)
}

func (s *Store) entries(ctx context.Context, q store.Query, kind store.Kind) ([]store.Entry, error) {
	f := &filter{}
	f.add("e.kind = ?", string(kind))
	if q.Target != "" {
		f.add("t.key = ?", q.Target)
	}
	if !q.Since.IsZero() {
		f.add("e.time_ns >= ?", q.Since.UnixNano())
	}
	if !q.Until.IsZero() {
		f.add("e.time_ns < ?", q.Until.UnixNano())
	}
	if len(q.Labels) > 0 {
		f.add("e.labels @> ?::jsonb", labelsJSON(q.Labels))
	}
	rows, err := s.pool.Query(ctx, "SELECT "+entryColumns+entriesFrom+f.sql()+" ORDER BY e.time_ns DESC, e.id DESC"+limitSQL(q.Limit), f.args...)
	if err != nil {
		return nil, fmt.Errorf("history of %ss: %w", kind, oneLine{err})
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Entry, error) { return scanEntry(r) })
	if err != nil {
		return nil, fmt.Errorf("history of %ss: %w", kind, oneLine{err})
	}
	if out == nil {
		out = []store.Entry{}
	}
	return out, nil
}

// findings returns the findings a query selects: those of the entries it
// selects (their sightings, with their problems' text), and the series
// findings of its target and times (with labels, of the targets that
// have entries carrying them).
func (s *Store) findings(ctx context.Context, q store.Query) ([]store.Finding, error) {
	seen := &filter{}
	if q.Target != "" {
		seen.add("t.key = ?", q.Target)
	}
	if !q.Since.IsZero() {
		seen.add("e.time_ns >= ?", q.Since.UnixNano())
	}
	if !q.Until.IsZero() {
		seen.add("e.time_ns < ?", q.Until.UnixNano())
	}
	if len(q.Severities) > 0 {
		seen.add("s.severity = ANY(?)", q.Severities)
	}
	if len(q.Labels) > 0 {
		seen.add("e.labels @> ?::jsonb", labelsJSON(q.Labels))
	}
	// The series' conditions number their arguments after the entries'.
	series := &filter{args: slices.Clone(seen.args)}
	if q.Target != "" {
		series.add("t.key = ?", q.Target)
	}
	if !q.Since.IsZero() {
		series.add("f.time_ns >= ?", q.Since.UnixNano())
	}
	if !q.Until.IsZero() {
		series.add("f.time_ns < ?", q.Until.UnixNano())
	}
	if len(q.Severities) > 0 {
		series.add("f.severity = ANY(?)", q.Severities)
	}
	if len(q.Labels) > 0 {
		series.add("f.target_id IN (SELECT e.target_id FROM entries e WHERE e.labels @> ?::jsonb)", labelsJSON(q.Labels))
	}
	// Newest first; at one time, entries' findings before the series'
	// and in the order they were indexed.
	rows, err := s.pool.Query(ctx, `SELECT t.key, e.time_ns AS time_ns, e.path, s.severity, p.kind, p.title, p.location,
			e.kind, p.cause, p.evidence, 0 AS series, e.id AS id, s.ord::BIGINT AS ord
		FROM sightings s JOIN entries e ON e.id = s.entry_id JOIN problems p ON p.id = s.problem_id
			JOIN targets t ON t.id = e.target_id`+seen.sql()+`
		UNION ALL
		SELECT t.key, f.time_ns, f.path, f.severity, f.kind, f.title, f.location, f.source, f.cause, f.evidence, 1, f.id, 0
		FROM findings f JOIN targets t ON t.id = f.target_id`+series.sql()+`
		ORDER BY time_ns DESC, series, id, ord`+limitSQL(q.Limit), series.args...)
	if err != nil {
		return nil, fmt.Errorf("history of findings: %w", oneLine{err})
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Finding, error) {
		var fd store.Finding
		var ns, id, ord int64
		var fromSeries int32
		var ev string
		err := r.Scan(&fd.Target, &ns, &fd.Path, &fd.Severity, &fd.Kind, &fd.Title, &fd.Where, &fd.Source, &fd.Cause, &ev,
			&fromSeries, &id, &ord)
		fd.Time, fd.Evidence = fromNano(ns), store.ParseEvidence(ev)
		return fd, err
	})
	if err != nil {
		return nil, fmt.Errorf("history of findings: %w", oneLine{err})
	}
	if out == nil {
		out = []store.Finding{}
	}
	return out, nil
}

// Series returns a target's points of one metric with times in [from,
// to], oldest first; a zero from or to leaves that end open.
func (s *Store) Series(target, metric string, from, to time.Time) ([]store.Point, error) {
	id, err := store.MetricID(metric)
	if err != nil {
		return nil, fmt.Errorf("series %s of %s: %w", metric, target, oneLine{err})
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if !from.IsZero() {
		lo = from.UnixNano()
	}
	if !to.IsZero() {
		hi = to.UnixNano()
	}
	rows, err := s.pool.Query(context.Background(), `SELECT p.time_ns, p.value FROM points p
		WHERE p.target_id = (SELECT id FROM targets WHERE key = $1) AND p.metric_id = $2 AND p.time_ns BETWEEN $3 AND $4
		ORDER BY p.time_ns, p.entry_id`, target, id, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("series %s of %s: %w", metric, target, oneLine{err})
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Point, error) {
		var ns int64
		var p store.Point
		err := r.Scan(&ns, &p.Value)
		p.Time = fromNano(ns)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("series %s of %s: %w", metric, target, oneLine{err})
	}
	if out == nil {
		out = []store.Point{}
	}
	return out, nil
}

// Targets returns the keys of the targets with at least one entry, sorted.
func (s *Store) Targets() ([]string, error) {
	rows, err := s.pool.Query(context.Background(), `SELECT key FROM targets t
		WHERE EXISTS (SELECT 1 FROM entries e WHERE e.target_id = t.id) ORDER BY key COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("list targets: %w", oneLine{err})
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list targets: %w", oneLine{err})
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// Size returns the bytes of the stored runs, as indexed.
func (s *Store) Size() (int64, error) {
	var n int64
	if err := s.pool.QueryRow(context.Background(), "SELECT COALESCE(SUM(bytes), 0)::BIGINT FROM entries").Scan(&n); err != nil {
		return 0, fmt.Errorf("store size: %w", oneLine{err})
	}
	return n, nil
}

// EntryAt returns the entry stored at path; false when there is none.
func (s *Store) EntryAt(path string) (store.Entry, bool, error) {
	e, err := scanEntry(s.pool.QueryRow(context.Background(), "SELECT "+entryColumns+entriesFrom+" WHERE e.path = $1", path))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Entry{}, false, nil
	}
	if err != nil {
		return store.Entry{}, false, fmt.Errorf("entry %s: %w", path, oneLine{err})
	}
	return e, true, nil
}

// lastEntry returns a target's newest entry before a time that meets cond.
func (s *Store) lastEntry(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, target string, before time.Time, cond string) (store.Entry, bool, error) {
	e, err := scanEntry(q.QueryRow(ctx, "SELECT "+entryColumns+entriesFrom+
		" WHERE t.key = $1 AND e.time_ns < $2 AND "+cond+" ORDER BY e.time_ns DESC, e.id DESC LIMIT 1", target, before.UnixNano()))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Entry{}, false, nil
	}
	if err != nil {
		return store.Entry{}, false, err
	}
	return e, true, nil
}

// LastHealthyRun returns a target's last complete scheduled run before a
// time: a bundle's baseline.
func (s *Store) LastHealthyRun(target string, before time.Time) (store.Entry, bool, error) {
	e, ok, err := s.lastEntry(context.Background(), s.pool, target, before, "e.kind = 'run' AND e.scheduled AND e.status = 'complete'")
	if err != nil {
		return store.Entry{}, false, fmt.Errorf("last healthy run of %s: %w", target, oneLine{err})
	}
	return e, ok, nil
}

// MarkBeforeOOM marks the capture nearest before a target's OOM kill: its
// last bundle before killedAt, or its last run. The mark goes into the
// run's entry.json object first, then into the index.
func (s *Store) MarkBeforeOOM(target string, killedAt time.Time) (store.Entry, bool, error) {
	fail := func(err error) (store.Entry, bool, error) {
		return store.Entry{}, false, fmt.Errorf("mark the capture of %s before its OOM kill at %s: %w", target, killedAt.UTC().Format(time.RFC3339), oneLine{err})
	}
	ctx := context.Background()
	e, ok, err := s.lastEntry(ctx, s.pool, target, killedAt, "e.kind = 'bundle'")
	if err == nil && !ok {
		e, ok, err = s.lastEntry(ctx, s.pool, target, killedAt, "e.kind = 'run'")
	}
	if err != nil {
		return fail(err)
	}
	if !ok {
		return store.Entry{}, false, nil
	}
	// entry.json grows by the mark: the entry's bytes follow, so that
	// Size stays the bytes of its objects.
	was, err := store.RecordSize(e)
	if err != nil {
		return fail(err)
	}
	e.BeforeOOM = true
	now, err := store.RecordSize(e)
	if err != nil {
		return fail(err)
	}
	if err := s.rewriteRecord(ctx, e); err != nil {
		return fail(err)
	}
	e.Bytes += now - was
	if _, err := s.pool.Exec(ctx, "UPDATE entries SET before_oom = true, bytes = bytes + $2 WHERE id = $1", e.ID, now-was); err != nil {
		return fail(err)
	}
	return e, true, nil
}

// AddFindings stores findings of the diagnosis over the stored series.
func (s *Store) AddFindings(fs []store.Finding) error {
	for _, f := range fs {
		if f.Target == "" || f.Time.IsZero() {
			return fmt.Errorf("add findings: %q (%s) has no target or no time", f.Title, f.Kind)
		}
	}
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, f := range fs {
			tid, err := targetID(ctx, tx, f.Target)
			if err != nil {
				return err
			}
			if f.Source == "" {
				f.Source = store.SourceSeries
			}
			if _, err := tx.Exec(ctx, `INSERT INTO findings (entry_id, target_id, time_ns, path, source, severity, kind, title, location, cause, evidence)
				VALUES (NULL, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				tid, f.Time.UnixNano(), f.Path, f.Source, f.Severity, f.Kind, f.Title, f.Where, f.Cause, store.EvidenceText(f.Evidence)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("add findings: %w", oneLine{err})
	}
	return nil
}
