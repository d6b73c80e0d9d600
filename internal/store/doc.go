// Package store is heapscope's embedded store, where watch keeps what it
// captures: run directories in the format profile writes, and an index of
// them in SQLite (modernc.org/sqlite, pure Go) with the series derived
// from each run's result.json at ingest, so that history, timelines and
// the diagnosis over days never parse a profile.
//
// The data directory DIR holds:
//
//	index.db (-wal, -shm)               the index, in WAL mode
//	runs/<target>/<time>[-N]/           scheduled runs
//	bundles/<target>/<time>-<trigger>[-N]/  trigger bundles
//	.tmp/                               captures in progress, never listed
//
// <target> is the target's host_port and a hash of its whole key, <time>
// the entry's time in UTC (20060102T150405Z), <trigger> the expression
// that fired (memory-ge-80pct). Each run directory also holds entry.json,
// the store's record of the entry (kind, target, labels, time, trigger,
// capture time), so that a directory alone can be indexed again.
//
// A capture goes through Begin (a fresh directory under .tmp), the run
// writing into it (result.json last), then Commit: entry.json, fsync of
// every file, a rename into runs/ or bundles/ that never replaces, fsync
// of the parents, and only then one transaction that indexes the entry.
// So a crash leaves a run either absent or complete, and the index never
// names a directory that is not whole: the worst a crash leaves is a
// complete run not yet indexed, which Check reports and repairs and which
// Adopt (watch, as it starts) indexes. Commit reads every file of the run
// back first (VerifyRun), and stores a complete run with a file that does
// not read back as partial. Retention
// works the other way round: index rows first, then each directory is
// moved under .tmp and removed there. docs/store.md has the argument in
// full, the index schema and the retention rules.
//
// # Series
//
// Every entry adds one point per figure its result.json measured, at its
// window's end (the entry's time plus window.duration_seconds); a figure
// the run could not measure (result.json's unmeasured, or an unknown
// source) adds no point rather than a zero. The names are those the
// server serves as timelines:
//
//	rss            bytes     rss.rss_bytes, when rss.source is proc or metrics
//	heap_after_gc  bytes     the last heap snapshot's live_bytes (HeapAlloc
//	                         right after its forced GC); else memstats.alloc_bytes
//	                         when the window's MemStats were measured
//	heap_objects   objects   the last snapshot's live_objects; else
//	                         memstats.heap_objects, likewise
//	goroutines     count     the last snapshot's goroutines (heap_growth)
//	alloc_rate     bytes/s   memstats.allocated_bytes_per_second: allocations
//	                         over the window
//	gc_cpu         fraction  memstats.gc_cpu_fraction, when its scope is the
//	                         window (a lifetime share is left out)
//	pause_p99      seconds   memstats.gc_pause_p99_seconds, when the window's
//	                         pauses were covered (gc_pauses_covered > 0)
//	memory_limit   bytes     rss.cgroup.limit_bytes, when the target's cgroup
//	                         has a memory limit
//
// # Concurrency
//
// A Store is safe for concurrent use. It writes through one connection
// and reads through others, which WAL lets run beside a write. Several
// processes may open the same directory (watch, with history or check
// beside it): each holds a shared lock on .tmp, and .tmp is emptied of
// what dead processes left only under an exclusive one, by Open or Check
// when no other process has the store open.
package store
