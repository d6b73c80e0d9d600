-- Version 1 of the shared store's schema: the embedded index's tables
-- (internal/store/schema/001_index.sql) in PostgreSQL, plus the names
-- taken in the bucket. Times are BIGINT nanoseconds since 1970-01-01 UTC,
-- as in the embedded index, so that both backends order and bound them
-- the same way.

CREATE TABLE targets (
	id   BIGSERIAL PRIMARY KEY,
	key  TEXT NOT NULL UNIQUE,
	slug TEXT NOT NULL UNIQUE
);

-- names holds every run path taken in the bucket: taken before its
-- objects are uploaded, removed only after they are deleted. A name with
-- no entry is an upload in progress, or one a crash interrupted (Retain
-- deletes its objects once it is old).
CREATE TABLE names (
	path  TEXT PRIMARY KEY,
	taken TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- entries holds one row per stored run; labels are the target's labels
-- at capture, as a JSON object (the index's labels table, folded).
CREATE TABLE entries (
	id                BIGSERIAL PRIMARY KEY,
	kind              TEXT    NOT NULL CHECK (kind IN ('run', 'bundle')),
	target_id         BIGINT  NOT NULL REFERENCES targets (id),
	time_ns           BIGINT  NOT NULL,
	end_ns            BIGINT  NOT NULL,
	path              TEXT    NOT NULL UNIQUE REFERENCES names (path),
	status            TEXT    NOT NULL,
	bytes             BIGINT  NOT NULL,
	scheduled         BOOLEAN NOT NULL DEFAULT false,
	before_oom        BOOLEAN NOT NULL DEFAULT false,
	labels            JSONB   NOT NULL DEFAULT '{}',
	trigger_expr      TEXT,
	trigger_value     DOUBLE PRECISION,
	trigger_threshold DOUBLE PRECISION,
	trigger_unit      TEXT,
	capture_seconds   DOUBLE PRECISION
);
CREATE INDEX entries_by_target_time ON entries (target_id, time_ns);
CREATE INDEX entries_by_time ON entries (time_ns);
CREATE INDEX entries_by_labels ON entries USING GIN (labels jsonb_path_ops);

CREATE TABLE findings (
	id        BIGSERIAL PRIMARY KEY,
	entry_id  BIGINT REFERENCES entries (id) ON DELETE CASCADE,
	target_id BIGINT NOT NULL REFERENCES targets (id),
	time_ns   BIGINT NOT NULL,
	path      TEXT   NOT NULL,
	source    TEXT   NOT NULL,
	severity  TEXT   NOT NULL,
	kind      TEXT   NOT NULL,
	title     TEXT   NOT NULL,
	location  TEXT   NOT NULL
);
CREATE INDEX findings_by_target_time ON findings (target_id, time_ns);
CREATE INDEX findings_by_time ON findings (time_ns);
CREATE INDEX findings_by_entry ON findings (entry_id);

-- points holds the series (metric ids as in store.Metrics' table), keyed
-- for the one query timelines make; rows go with their entry.
CREATE TABLE points (
	target_id BIGINT           NOT NULL,
	metric_id SMALLINT         NOT NULL,
	time_ns   BIGINT           NOT NULL,
	entry_id  BIGINT           NOT NULL REFERENCES entries (id) ON DELETE CASCADE,
	value     DOUBLE PRECISION NOT NULL,
	PRIMARY KEY (target_id, metric_id, time_ns, entry_id)
);
CREATE INDEX points_by_entry ON points (entry_id);
