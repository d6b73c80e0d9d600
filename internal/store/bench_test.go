package store

import (
	"database/sql"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The series benchmark's store: targets captured every 15 minutes for 30
// days. 50 targets by default, filled in seconds; bench/timeline.sh runs
// it at 500 (1.44 million entries) through these flags
// (go test … -args -series.targets=500).
var (
	seriesTargets = flag.Int("series.targets", 50, "BenchmarkSeries: targets in the store")
	seriesDays    = flag.Int("series.days", 30, "BenchmarkSeries: days of captures per target, and of each timeline")
	seriesDir     = flag.String("series.dir", "", "BenchmarkSeries: the store's directory, filled when it has no index, else reused as it is (default: a fresh temporary directory)")
)

// benchCadence is the benchmark store's schedule.
const benchCadence = 15 * time.Minute

// BenchmarkSeries reads a 30-day timeline (2,880 points) of one metric of
// one target, both drawn at random, out of a store that a watch of
// -series.targets targets filled for 30 days (watchFill: the index as Commit writes it,
// in the order a watch commits, without the run directories). Besides
// the mean it reports the latency's p50, p99 and max over the iterations,
// the index's bytes on disk and the time the fill took.
func BenchmarkSeries(b *testing.B) {
	f := watchFill{
		targets: *seriesTargets,
		slots:   *seriesDays * int(24*time.Hour/benchCadence),
		start:   time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		every:   benchCadence,
		fixture: fixtureLeaky,
		vary:    true,
	}
	dir := *seriesDir
	if dir == "" {
		dir = b.TempDir()
	}
	_, err := os.Stat(filepath.Join(dir, IndexFile))
	reuse := err == nil
	s, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if !reuse {
		f.fill(b, s)
	}
	filled := time.Since(t0)
	// Reopened, as a server starting on it would find it: the WAL
	// checkpointed into index.db, SQLite's page cache empty.
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if s, err = Open(dir); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	size := indexBytes(b, dir)
	rng := rand.New(rand.NewPCG(1, 2))
	names := Metrics()
	from, to := f.start, f.end()
	lat := make([]time.Duration, 0, 1<<14)
	b.ReportAllocs()
	for b.Loop() {
		target, metric := fillTarget(rng.IntN(f.targets)), names[rng.IntN(len(names))]
		t := time.Now()
		pts, err := s.Series(target, metric, from, to)
		lat = append(lat, time.Since(t))
		if err != nil {
			b.Fatal(err)
		}
		if len(pts) != f.slots {
			b.Fatalf("%s of %s: %d points, want %d", metric, target, len(pts), f.slots)
		}
	}
	b.StopTimer()
	// Counted after the timelines, so that a store reused cold is read
	// cold by them, not by the counts.
	how := "filled in " + filled.Round(time.Second).String()
	if reuse {
		how = "reused from " + dir
	}
	runs, err := s.Size()
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d targets × %d days every %s: %d entries, %d points, %d sightings of %d problems, %d series findings, %d labels; index %.0f MiB, %s; the run directories (not written) would hold %.0f GiB",
		f.targets, *seriesDays, f.every, count(b, s.reader, "entries"), count(b, s.reader, "points"),
		count(b, s.reader, "sightings"), count(b, s.reader, "problems"), count(b, s.reader, "findings"), count(b, s.reader, "labels"), float64(size)/(1<<20), how, float64(runs)/(1<<30))
	entries := count(b, s.reader, "entries")
	perTable := tableBytes(b, s.reader)
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(perTable)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", t, float64(perTable[t])/float64(entries)))
	}
	b.Logf("index bytes a capture, by table with its indexes: %s", strings.Join(parts, ", "))
	slices.Sort(lat)
	ms := func(q float64) float64 {
		return float64(lat[min(int(q*float64(len(lat))), len(lat)-1)]) / float64(time.Millisecond)
	}
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
	b.ReportMetric(ms(1), "max-ms")
	b.ReportMetric(float64(size)/(1<<20), "index-MiB")
	b.ReportMetric(float64(size)/float64(entries), "index-B/capture")
	if !reuse {
		b.ReportMetric(filled.Seconds(), "fill-s")
	}
}

// indexBytes returns the bytes of the index's files in a data directory:
// index.db, its -wal and -shm.
func indexBytes(b *testing.B, dir string) int64 {
	b.Helper()
	files, err := filepath.Glob(filepath.Join(dir, IndexFile+"*"))
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			b.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// tableBytes returns the bytes of the pages each table of the index takes
// with its indexes (SQLite's dbstat), by table name.
func tableBytes(b *testing.B, db *sql.DB) map[string]int64 {
	b.Helper()
	rows, err := db.Query(`SELECT m.tbl_name, SUM(d.pgsize) FROM dbstat d JOIN sqlite_master m ON m.name = d.name
		GROUP BY m.tbl_name`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			b.Fatal(err)
		}
		out[name] = n
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return out
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
