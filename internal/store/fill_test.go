package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/heapscope/heapscope/internal/problem"
)

// watchFill is a store as a watch of many targets leaves it: every target
// captured once a slot, each capture a copy of one fixture's run. fill
// writes the index rows that Commit writes for those captures (entries,
// labels, problems and their sightings, points, in the order a watch commits them: slot by
// slot, target by target) with a few INSERT … SELECT statements instead
// of one transaction and a run directory per capture, so that a month of
// 500 targets is filled in a minute; the run directories themselves are
// not written. TestWatchFill_WritesWhatCommitWrites holds the two equal.
type watchFill struct {
	targets int
	slots   int           // captures per target
	start   time.Time     // the first slot, in whole seconds
	every   time.Duration // between slots, in whole seconds
	fixture string        // the run every capture is a copy of
	// vary spreads each point's value over ±25% of the fixture's, from
	// one entry to the next; false keeps the fixture's values.
	vary bool
}

// fillTarget is the key of the fill's i-th target.
func fillTarget(i int) string { return fmt.Sprintf("http://10.0.%d.%d:6060", i/250, i%250) }

// fillLabels are the labels the fill's i-th target is captured with.
func fillLabels(i int) map[string]string {
	return map[string]string{"group": "fleet", "zone": fmt.Sprintf("zone-%d", i%3)}
}

// fillEntry is the entry a watch commits for the fill's i-th target at t.
func fillEntry(i int, t time.Time) Entry {
	return Entry{Kind: KindRun, Target: fillTarget(i), Labels: fillLabels(i), Time: t, Scheduled: true}
}

// end returns the time just after the last slot's window.
func (f watchFill) end() time.Time { return f.start.Add(time.Duration(f.slots) * f.every) }

// fill writes the captures into s's index, a day of slots (or fewer) per
// transaction. s must hold no entries yet.
func (f watchFill) fill(tb testing.TB, s *Embedded) {
	tb.Helper()
	if f.start.Nanosecond() != 0 || f.every%time.Second != 0 {
		tb.Fatalf("fill from %s every %s: whole seconds only (entry.json's size depends on it)", f.start, f.every)
	}
	res := readFixture(tb, f.fixture)
	runBytes, err := treeBytes(filepath.Join(fixtureRoot, f.fixture))
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	conn, err := s.writer.Conn(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string, args ...any) {
		tb.Helper()
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			tb.Fatalf("fill: %v\n%s", err, q)
		}
	}
	// A cache that holds every series' last page, so that a slot's
	// inserts do not read the tree back from the file; the store's own
	// size again afterwards.
	var cache int
	if err := conn.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&cache); err != nil {
		tb.Fatal(err)
	}
	exec("PRAGMA cache_size = -262144")
	defer exec(fmt.Sprintf("PRAGMA cache_size = %d", cache))

	// What every capture adds, by target and by run: the temporary tables
	// the INSERT … SELECT statements read.
	exec(`CREATE TEMP TABLE fill_targets (id INTEGER PRIMARY KEY, bytes INTEGER NOT NULL);
		CREATE TEMP TABLE fill_labels (target_id INTEGER, name TEXT, value TEXT);
		CREATE TEMP TABLE fill_findings (ord INTEGER, severity TEXT, kind TEXT, title TEXT, location TEXT, cause TEXT, evidence TEXT);
		CREATE TEMP TABLE fill_values (metric_id INTEGER, value REAL, integral INTEGER)`)
	defer exec("DROP TABLE temp.fill_targets; DROP TABLE temp.fill_labels; DROP TABLE temp.fill_findings; DROP TABLE temp.fill_values")
	for i := range f.targets {
		e := fillEntry(i, f.start)
		record, err := json.MarshalIndent(recordOf(e), "", "  ")
		if err != nil {
			tb.Fatal(err)
		}
		exec("INSERT INTO targets (id, key, slug) VALUES (?, ?, ?)", i+1, e.Target, TargetSlug(e.Target))
		// Commit sums the run's files with the entry.json it wrote.
		exec("INSERT INTO fill_targets (id, bytes) VALUES (?, ?)", i+1, runBytes+int64(len(record))+1)
		for k, v := range e.Labels {
			exec("INSERT INTO fill_labels (target_id, name, value) VALUES (?, ?, ?)", i+1, k, v)
		}
	}
	for i, fd := range res.Findings {
		exec("INSERT INTO fill_findings (ord, severity, kind, title, location, cause, evidence) VALUES (?, ?, ?, ?, ?, ?, ?)",
			i, fd.Severity, fd.ID, fd.Title, where(fd), problem.CauseOf(fd), EvidenceText(problemEvidence(fd)))
	}
	for _, v := range SeriesOf(res) {
		unit := metrics[v.ID-1].unit
		exec("INSERT INTO fill_values (metric_id, value, integral) VALUES (?, ?, ?)",
			v.ID, v.Value, unit == "bytes" || unit == "objects" || unit == "goroutines")
	}
	// Each target's problems, once, as the last capture leaves them (the
	// fixture's findings are each a problem of their own), in the order
	// of their keys, as a commit adds them.
	last := unixNano(f.start.Add(time.Duration(f.slots-1) * f.every))
	exec(`INSERT INTO problems (target_id, cause, kind, location, title, evidence, first_ns, last_ns, captures)
		SELECT t.id, d.cause, d.kind, d.location, d.title, d.evidence, ?, ?, ?
		FROM fill_targets t, fill_findings d ORDER BY t.id, d.cause, d.kind, d.location`, unixNano(f.start), last, f.slots)
	value := "v.value"
	if f.vary {
		value = `CASE WHEN v.integral THEN round(v.value * (0.75 + ((e.id * 2654435761) % 1000) / 2000.0))
			ELSE v.value * (0.75 + ((e.id * 2654435761) % 1000) / 2000.0) END`
	}
	window := int64(windowEnd(f.start, res).Sub(f.start))
	var loadRate sql.NullFloat64
	if res.Load != nil && res.Load.AchievedRate != 0 {
		loadRate = sql.NullFloat64{Float64: res.Load.AchievedRate, Valid: true}
	}
	const perTx = 96 // a day at a 15-minute cadence
	for first := 0; first < f.slots; first += perTx {
		last := min(first+perTx, f.slots) - 1
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			tb.Fatal(err)
		}
		var after int64
		if err := tx.QueryRow("SELECT COALESCE(MAX(id), 0) FROM entries").Scan(&after); err != nil {
			tb.Fatal(err)
		}
		for _, st := range []struct {
			q    string
			args []any
		}{
			{`WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)
				INSERT INTO entries (kind, target_id, time_ns, end_ns, path, status, bytes, scheduled, before_oom, load_rate)
				SELECT 'run', t.id, ? + n.i * ?, ? + n.i * ? + ?,
					'runs/' || k.slug || '/' || strftime('%Y%m%dT%H%M%SZ', (? + n.i * ?) / 1000000000, 'unixepoch'),
					?, t.bytes, 1, 0, ?
				FROM n, fill_targets t JOIN targets k ON k.id = t.id ORDER BY n.i, t.id`,
				[]any{first, last, unixNano(f.start), int64(f.every), unixNano(f.start), int64(f.every), window,
					unixNano(f.start), int64(f.every), string(res.Status), loadRate}},
			{`INSERT INTO labels (entry_id, name, value)
				SELECT e.id, l.name, l.value FROM entries e JOIN fill_labels l ON l.target_id = e.target_id
				WHERE e.id > ? ORDER BY e.id, l.name`, []any{after}},
			{`INSERT INTO sightings (entry_id, ord, problem_id, severity)
				SELECT e.id, d.ord, p.id, d.severity
				FROM entries e, fill_findings d JOIN problems p
					ON p.target_id = e.target_id AND p.cause = d.cause AND p.kind = d.kind AND p.location = d.location
				WHERE e.id > ? ORDER BY e.id, d.ord`, []any{after}},
			{`INSERT INTO points (target_id, metric_id, time_ns, entry_id, value)
				SELECT e.target_id, v.metric_id, e.end_ns, e.id, ` + value + `
				FROM entries e, fill_values v WHERE e.id > ? ORDER BY e.id, v.metric_id`, []any{after}},
		} {
			if _, err := tx.Exec(st.q, st.args...); err != nil {
				tx.Rollback()
				tb.Fatalf("fill slots %d–%d: %v\n%s", first, last, err, st.q)
			}
		}
		if err := tx.Commit(); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestWatchFill_WritesWhatCommitWrites fills one store through Ingest,
// capture by capture, and another with watchFill, and wants the same rows
// in every table of the index.
func TestWatchFill_WritesWhatCommitWrites(t *testing.T) {
	f := watchFill{targets: 3, slots: 4, start: at(0), every: 15 * time.Minute, fixture: fixtureLeaky}
	ingested := openStore(t)
	src := fixtureDir(t, f.fixture)
	for n := range f.slots {
		for i := range f.targets {
			if _, err := ingested.Ingest(src, fillEntry(i, f.start.Add(time.Duration(n)*f.every))); err != nil {
				t.Fatal(err)
			}
		}
	}
	filled := openStore(t)
	f.fill(t, filled)
	for _, q := range []string{
		"SELECT * FROM targets ORDER BY id",
		"SELECT * FROM entries ORDER BY id",
		"SELECT * FROM labels ORDER BY entry_id, name",
		"SELECT * FROM problems ORDER BY id",
		"SELECT * FROM sightings ORDER BY entry_id, ord",
		"SELECT * FROM points ORDER BY target_id, metric_id, time_ns, entry_id",
	} {
		want, got := dump(t, ingested.reader, q), dump(t, filled.reader, q)
		if len(want) == 0 {
			t.Errorf("%s: no rows through Ingest", q)
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d rows filled, %d ingested", q, len(got), len(want))
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: row %d filled\n\t%s\nwant (ingested)\n\t%s", q, i, got[i], want[i])
			}
		}
	}
	// Varied, the values move and nothing else does.
	varied := openStore(t)
	f.vary = true
	f.fill(t, varied)
	q := "SELECT target_id, metric_id, time_ns, entry_id FROM points ORDER BY target_id, metric_id, time_ns, entry_id"
	if got, want := dump(t, varied.reader, q), dump(t, filled.reader, q); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("varied fill: points at\n%v\nwant\n%v", got, want)
	}
	q = "SELECT COUNT(DISTINCT value) FROM points WHERE metric_id = 2"
	if got := dump(t, varied.reader, q); got[0] == fmt.Sprintf("%#v", int64(1)) {
		t.Errorf("varied fill: one heap_after_gc value over %d points", f.targets*f.slots)
	}
}

// dump returns a query's rows, each with the Go type and value of every
// column.
func dump(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%#v", vals))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
