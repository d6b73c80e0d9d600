-- Version 5: what watch saw of a target's availability between its
-- captures: down, up, restart, oom_kill, with what it saw (detail).
CREATE TABLE events (
	id        INTEGER PRIMARY KEY,
	target_id INTEGER NOT NULL REFERENCES targets (id),
	time_ns   INTEGER NOT NULL,
	kind      TEXT    NOT NULL,
	detail    TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX events_by_target_time ON events (target_id, time_ns);
