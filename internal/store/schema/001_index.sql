-- Version 1 of the store's index: the targets, the entries (scheduled runs
-- and trigger bundles, one row per run directory), their labels and
-- findings, and the series derived from their result.json at ingest.
--
-- Times are integers, nanoseconds since 1970-01-01 UTC; a PostgreSQL
-- backend mirrors every table with BIGINT for INTEGER, DOUBLE PRECISION
-- for REAL and TEXT for TEXT. PRAGMA user_version holds the number of
-- the last file applied.

-- targets names every target the store has seen: key is the target as
-- watch names it, slug its directory under runs/ and bundles/.
CREATE TABLE targets (
	id   INTEGER PRIMARY KEY,
	key  TEXT NOT NULL UNIQUE,
	slug TEXT NOT NULL UNIQUE
);

-- entries holds one row per run directory: path is relative to the data
-- directory, time_ns the entry's time (by default its window's start),
-- end_ns its window's end (the time of its series points).
CREATE TABLE entries (
	id                INTEGER PRIMARY KEY,
	kind              TEXT    NOT NULL CHECK (kind IN ('run', 'bundle')),
	target_id         INTEGER NOT NULL REFERENCES targets (id),
	time_ns           INTEGER NOT NULL,
	end_ns            INTEGER NOT NULL,
	path              TEXT    NOT NULL UNIQUE,
	status            TEXT    NOT NULL,
	bytes             INTEGER NOT NULL,
	scheduled         INTEGER NOT NULL DEFAULT 0,
	before_oom        INTEGER NOT NULL DEFAULT 0,
	trigger_expr      TEXT,
	trigger_value     REAL,
	trigger_threshold REAL,
	trigger_unit      TEXT,
	capture_seconds   REAL
);
CREATE INDEX entries_by_target_time ON entries (target_id, time_ns);
CREATE INDEX entries_by_time ON entries (time_ns);

CREATE TABLE labels (
	entry_id INTEGER NOT NULL REFERENCES entries (id) ON DELETE CASCADE,
	name     TEXT    NOT NULL,
	value    TEXT    NOT NULL,
	PRIMARY KEY (entry_id, name)
) WITHOUT ROWID;

-- findings holds the findings of every entry's result.json (source 'run'
-- or 'bundle', entry_id set) and those of the diagnosis over the stored
-- series (source 'series', entry_id NULL).
CREATE TABLE findings (
	id        INTEGER PRIMARY KEY,
	entry_id  INTEGER REFERENCES entries (id) ON DELETE CASCADE,
	target_id INTEGER NOT NULL REFERENCES targets (id),
	time_ns   INTEGER NOT NULL,
	path      TEXT    NOT NULL,
	source    TEXT    NOT NULL,
	severity  TEXT    NOT NULL,
	kind      TEXT    NOT NULL,
	title     TEXT    NOT NULL,
	location  TEXT    NOT NULL
);
CREATE INDEX findings_by_target_time ON findings (target_id, time_ns);
CREATE INDEX findings_by_time ON findings (time_ns);
CREATE INDEX findings_by_entry ON findings (entry_id);

-- metrics names the series; the package doc says where each comes from.
CREATE TABLE metrics (
	id   INTEGER PRIMARY KEY,
	name TEXT NOT NULL UNIQUE,
	unit TEXT NOT NULL
);
INSERT INTO metrics (id, name, unit) VALUES
	(1, 'rss', 'bytes'),
	(2, 'heap_after_gc', 'bytes'),
	(3, 'heap_objects', 'objects'),
	(4, 'goroutines', 'goroutines'),
	(5, 'alloc_rate', 'bytes/s'),
	(6, 'gc_cpu', 'fraction'),
	(7, 'pause_p99', 'seconds');

-- points holds the series, one row per figure an entry measured, keyed
-- for the one query timelines make: a target's metric over a time range.
-- Rows go with their entry (deleted by key, not by foreign key, to keep
-- this table to its primary key).
CREATE TABLE points (
	target_id INTEGER NOT NULL,
	metric_id INTEGER NOT NULL,
	time_ns   INTEGER NOT NULL,
	entry_id  INTEGER NOT NULL,
	value     REAL    NOT NULL,
	PRIMARY KEY (target_id, metric_id, time_ns, entry_id)
) WITHOUT ROWID;
