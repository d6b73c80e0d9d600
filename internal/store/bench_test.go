package store

import (
	"fmt"
	"testing"
	"time"
)

// The series benchmark's store: 500 targets, 30 days at a 15-minute
// cadence, every metric.
const (
	benchTargets = 500
	benchPoints  = 30 * 24 * 4 // 2,880 per target and metric
	benchCadence = 15 * time.Minute
)

// seedSeries fills the index with the benchmark's points directly (as
// Commit would leave them, without the run directories), in one
// statement: 10 million rows through the driver one by one would take
// minutes.
func seedSeries(b *testing.B, s *Store, start time.Time) {
	b.Helper()
	tx, err := s.writer.Begin()
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	for i := range benchTargets {
		key := benchTarget(i)
		if _, err := tx.Exec("INSERT INTO targets (id, key, slug) VALUES (?, ?, ?)", i+1, key, targetSlug(key)); err != nil {
			b.Fatal(err)
		}
	}
	// Entry ids as Commit numbers them: one per target and time.
	_, err = tx.Exec(`WITH RECURSIVE
		t(id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM t WHERE id < ?),
		m(id) AS (SELECT id FROM metrics),
		n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ? - 1)
		INSERT INTO points (target_id, metric_id, time_ns, entry_id, value)
		SELECT t.id, m.id, ? + n.i * ?, n.i * ? + t.id, (t.id * 1000 + n.i) * 1.5
		FROM t, m, n ORDER BY t.id, m.id, n.i`,
		benchTargets, benchPoints, unixNano(start), int64(benchCadence), benchTargets)
	if err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

func benchTarget(i int) string { return fmt.Sprintf("http://10.0.%d.%d:6060", i/250, i%250) }

// BenchmarkSeries reads one target's heap after GC over 30 days (2,880
// points) out of 500 targets' every series: a timeline's query.
func BenchmarkSeries(b *testing.B) {
	s := openStore(b)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t0 := time.Now()
	seedSeries(b, s, start)
	b.Logf("seeded %d points in %s", count(b, s.reader, "points"), time.Since(t0).Round(time.Millisecond))
	target := benchTarget(benchTargets / 2)
	end := start.Add(benchPoints * benchCadence)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		pts, err := s.Series(target, MetricHeapAfterGC, start, end)
		if err != nil {
			b.Fatal(err)
		}
		if len(pts) != benchPoints {
			b.Fatalf("%d points, want %d", len(pts), benchPoints)
		}
	}
}

// BenchmarkCommit stores a capture: the run written under .tmp (a copy of
// the fixture), then Commit's fsyncs, rename and index transaction.
func BenchmarkCommit(b *testing.B) {
	s := openStore(b)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p, err := s.Begin(KindRun, "http://127.0.0.1:6060")
		if err != nil {
			b.Fatal(err)
		}
		writeFixture(b, fixtureLeaky, p.Dir())
		if _, err := p.Commit(p.Dir(), Entry{Time: t0.Add(time.Duration(i) * benchCadence), Scheduled: true}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
