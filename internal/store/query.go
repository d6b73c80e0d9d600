package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// entryColumns are the columns scanEntry reads, from entries e joined
// with targets t.
const entryColumns = `e.id, e.kind, t.key, e.time_ns, e.end_ns, e.path, e.status, e.bytes, e.scheduled, e.before_oom,
	e.trigger_expr, e.trigger_value, e.trigger_threshold, e.trigger_unit, e.capture_seconds, e.load_rate, e.slot_ns`

type scanner interface{ Scan(...any) error }

func scanEntry(row scanner) (Entry, error) {
	var e Entry
	var kind string
	var ns, end int64
	var trigExpr, trigUnit sql.NullString
	var trigValue, trigThreshold, capture, load sql.NullFloat64
	var slot sql.NullInt64
	if err := row.Scan(&e.ID, &kind, &e.Target, &ns, &end, &e.Path, &e.Status, &e.Bytes, &e.Scheduled, &e.BeforeOOM,
		&trigExpr, &trigValue, &trigThreshold, &trigUnit, &capture, &load, &slot); err != nil {
		return Entry{}, err
	}
	e.Kind, e.Time, e.End, e.CaptureSeconds, e.LoadRate = Kind(kind), fromNano(ns), fromNano(end), capture.Float64, load.Float64
	if slot.Valid {
		e.Slot = fromNano(slot.Int64)
		e.LateSeconds = Lateness(e)
	}
	if trigExpr.Valid {
		e.Trigger = &Trigger{Expr: trigExpr.String, Value: trigValue.Float64, Threshold: trigThreshold.Float64, Unit: trigUnit.String}
	}
	return e, nil
}

// filter builds the WHERE clause shared by History's lists.
type filter struct {
	where []string
	args  []any
}

func (f *filter) add(cond string, args ...any) {
	f.where = append(f.where, cond)
	f.args = append(f.args, args...)
}

func (f *filter) sql() string {
	if len(f.where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(f.where, " AND ")
}

// entryFilter selects the entries of a query (in entries e joined with
// targets t).
func entryFilter(q Query) *filter {
	f := &filter{}
	if q.Target != "" {
		f.add("t.key = ?", q.Target)
	}
	if !q.Since.IsZero() {
		f.add("e.time_ns >= ?", unixNano(q.Since))
	}
	if !q.Until.IsZero() {
		f.add("e.time_ns < ?", unixNano(q.Until))
	}
	for k, v := range q.Labels {
		f.add("EXISTS (SELECT 1 FROM labels l WHERE l.entry_id = e.id AND l.name = ? AND l.value = ?)", k, v)
	}
	return f
}

// History returns the runs, bundles and findings a query selects, each
// list newest first.
func (s *Embedded) History(q Query) (History, error) {
	h := History{Runs: []Entry{}, Bundles: []Entry{}, Findings: []Finding{}}
	var err error
	if h.Runs, err = s.entries(q, KindRun); err != nil {
		return History{}, err
	}
	if h.Bundles, err = s.entries(q, KindBundle); err != nil {
		return History{}, err
	}
	if h.Findings, err = s.findings(q); err != nil {
		return History{}, err
	}
	return h, nil
}

func limitSQL(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" LIMIT %d", n)
}

func (s *Embedded) entries(q Query, kind Kind) ([]Entry, error) {
	f := entryFilter(q)
	f.add("e.kind = ?", string(kind))
	rows, err := s.reader.Query("SELECT "+entryColumns+" FROM entries e JOIN targets t ON t.id = e.target_id"+
		f.sql()+" ORDER BY e.time_ns DESC, e.id DESC"+limitSQL(q.Limit), f.args...)
	if err != nil {
		return nil, fmt.Errorf("history of %ss: %w", kind, err)
	}
	defer rows.Close()
	out := []Entry{}
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, fmt.Errorf("history of %ss: %w", kind, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history of %ss: %w", kind, err)
	}
	if err := s.fillLabels(out); err != nil {
		return nil, fmt.Errorf("history of %ss: %w", kind, err)
	}
	return out, nil
}

// fillLabels loads the labels of entries, a few hundred at a time.
func (s *Embedded) fillLabels(es []Entry) error {
	const batch = 500
	byID := make(map[int64]*Entry, len(es))
	for i := range es {
		byID[es[i].ID] = &es[i]
	}
	for start := 0; start < len(es); start += batch {
		part := es[start:min(start+batch, len(es))]
		args := make([]any, len(part))
		for i, e := range part {
			args[i] = e.ID
		}
		rows, err := s.reader.Query("SELECT entry_id, name, value FROM labels WHERE entry_id IN (?"+
			strings.Repeat(", ?", len(part)-1)+")", args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var k, v string
			if err := rows.Scan(&id, &k, &v); err != nil {
				rows.Close()
				return err
			}
			e := byID[id]
			if e.Labels == nil {
				e.Labels = map[string]string{}
			}
			e.Labels[k] = v
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// findings returns the findings a query selects: those of the entries it
// selects (their sightings, with their problems' text), and the series
// findings of its target and times (with labels, of the targets that
// have entries carrying them).
func (s *Embedded) findings(q Query) ([]Finding, error) {
	seen := entryFilter(q)
	series := &filter{}
	if q.Target != "" {
		series.add("t.key = ?", q.Target)
	}
	if !q.Since.IsZero() {
		series.add("f.time_ns >= ?", unixNano(q.Since))
	}
	if !q.Until.IsZero() {
		series.add("f.time_ns < ?", unixNano(q.Until))
	}
	if len(q.Severities) > 0 {
		marks := strings.TrimSuffix(strings.Repeat("?,", len(q.Severities)), ",")
		args := make([]any, len(q.Severities))
		for i, sev := range q.Severities {
			args[i] = sev
		}
		seen.add("s.severity IN ("+marks+")", args...)
		series.add("f.severity IN ("+marks+")", args...)
	}
	if len(q.Labels) > 0 {
		lf := entryFilter(Query{Labels: q.Labels})
		series.add("f.target_id IN (SELECT e.target_id FROM entries e WHERE "+strings.TrimPrefix(lf.sql(), " WHERE ")+")", lf.args...)
	}
	seen.add("s.entry_id = e.id")
	// Newest first; at one time, entries' findings before the series'
	// and in the order they were indexed. The entries lead (CROSS JOIN
	// keeps them the outer loop): without statistics SQLite would read
	// every sighting of every capture to find the week a page asks for.
	rows, err := s.reader.Query(`SELECT t.key AS target, e.time_ns AS time_ns, e.path, s.severity, p.kind, p.title, p.location,
			e.kind, p.cause, p.evidence, 0 AS series, e.id AS id, s.ord AS ord
		FROM entries e CROSS JOIN sightings s JOIN problems p ON p.id = s.problem_id
			JOIN targets t ON t.id = e.target_id`+seen.sql()+`
		UNION ALL
		SELECT t.key, f.time_ns, f.path, f.severity, f.kind, f.title, f.location, f.source, f.cause, f.evidence, 1, f.id, 0
		FROM findings f JOIN targets t ON t.id = f.target_id`+series.sql()+`
		ORDER BY time_ns DESC, series, id, ord`+limitSQL(q.Limit), append(seen.args, series.args...)...)
	if err != nil {
		return nil, fmt.Errorf("history of findings: %w", err)
	}
	defer rows.Close()
	out := []Finding{}
	for rows.Next() {
		var fd Finding
		var ns, id, ord int64
		var ev string
		var fromSeries bool
		if err := rows.Scan(&fd.Target, &ns, &fd.Path, &fd.Severity, &fd.Kind, &fd.Title, &fd.Where, &fd.Source, &fd.Cause, &ev,
			&fromSeries, &id, &ord); err != nil {
			return nil, fmt.Errorf("history of findings: %w", err)
		}
		fd.Time, fd.Evidence = fromNano(ns), ParseEvidence(ev)
		out = append(out, fd)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history of findings: %w", err)
	}
	return out, nil
}

// LastHealthyRun returns a target's last complete scheduled run before a
// time: the baseline a bundle is compared with. false when there is none.
func (s *Embedded) LastHealthyRun(target string, before time.Time) (Entry, bool, error) {
	e, ok, err := s.lastEntry(target, before, "e.kind = 'run' AND e.scheduled = 1 AND e.status = 'complete'")
	if err != nil {
		return Entry{}, false, fmt.Errorf("last healthy run of %s: %w", target, err)
	}
	return e, ok, nil
}

// EntryAt returns the entry whose run directory is path (relative to the
// data directory, as Entry.Path); false when the index has none. A path
// is only ever looked up, never joined to the data directory here, so a
// caller that opens what EntryAt returned opens an indexed run.
func (s *Embedded) EntryAt(path string) (Entry, bool, error) {
	row := s.reader.QueryRow("SELECT "+entryColumns+" FROM entries e JOIN targets t ON t.id = e.target_id WHERE e.path = ?", path)
	e, err := scanEntry(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("entry %s: %w", path, err)
	}
	es := []Entry{e}
	if err := s.fillLabels(es); err != nil {
		return Entry{}, false, fmt.Errorf("entry %s: %w", path, err)
	}
	return es[0], true, nil
}

// lastEntry returns a target's newest entry before a time that meets cond.
func (s *Embedded) lastEntry(target string, before time.Time, cond string) (Entry, bool, error) {
	row := s.reader.QueryRow("SELECT "+entryColumns+` FROM entries e JOIN targets t ON t.id = e.target_id
		WHERE t.key = ? AND e.time_ns < ? AND `+cond+" ORDER BY e.time_ns DESC, e.id DESC LIMIT 1",
		target, unixNano(before))
	e, err := scanEntry(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, err
	}
	es := []Entry{e}
	if err := s.fillLabels(es); err != nil {
		return Entry{}, false, err
	}
	return es[0], true, nil
}

// MarkBeforeOOM marks the capture nearest before a target was killed for
// lack of memory: its last bundle before killedAt, or its last run when it
// has no bundle. It returns the entry marked, and false when the target
// has no entry before killedAt. The mark goes into the run directory's
// entry.json first, then into the index.
func (s *Embedded) MarkBeforeOOM(target string, killedAt time.Time) (Entry, bool, error) {
	fail := func(err error) (Entry, bool, error) {
		return Entry{}, false, fmt.Errorf("mark the capture of %s before its OOM kill at %s: %w", target, killedAt.UTC().Format(time.RFC3339), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok, err := s.lastEntry(target, killedAt, "e.kind = 'bundle'")
	if err == nil && !ok {
		e, ok, err = s.lastEntry(target, killedAt, "e.kind = 'run'")
	}
	if err != nil {
		return fail(err)
	}
	if !ok {
		return Entry{}, false, nil
	}
	e.BeforeOOM = true
	dir := filepath.Join(s.dir, filepath.FromSlash(e.Path))
	if err := writeRecord(dir, e); err != nil {
		return fail(err)
	}
	// entry.json grew by the mark: the index's bytes follow, so that Size
	// stays the size of the files.
	if e.Bytes, err = treeBytes(dir); err != nil {
		return fail(err)
	}
	err = s.withTx(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec("UPDATE entries SET before_oom = 1, bytes = ? WHERE id = ?", e.Bytes, e.ID)
		return err
	})
	if err != nil {
		return fail(err)
	}
	return e, true, nil
}

// AddFindings stores findings of the diagnosis over the stored series; an
// empty Source stands for SourceSeries. Each needs its Target and Time.
func (s *Embedded) AddFindings(fs []Finding) error {
	for _, f := range fs {
		if f.Target == "" || f.Time.IsZero() {
			return fmt.Errorf("add findings: %q (%s) has no target or no time", f.Title, f.Kind)
		}
	}
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		for _, f := range fs {
			tid, err := targetID(tx, f.Target)
			if err != nil {
				return err
			}
			if f.Source == "" {
				f.Source = SourceSeries
			}
			if _, err := tx.Exec(`INSERT INTO findings (entry_id, target_id, time_ns, path, source, severity, kind, title, location, cause, evidence)
				VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				tid, unixNano(f.Time), f.Path, f.Source, f.Severity, f.Kind, f.Title, f.Where, f.Cause, EvidenceText(f.Evidence)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("add findings: %w", err)
	}
	return nil
}
