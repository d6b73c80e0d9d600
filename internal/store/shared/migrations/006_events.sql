-- Version 6: what watch saw of a target's availability between its
-- captures, as the embedded store's version 5: down, up, restart,
-- oom_kill, with what it saw (detail).
CREATE TABLE events (
	id        BIGSERIAL PRIMARY KEY,
	target_id BIGINT NOT NULL REFERENCES targets (id),
	time_ns   BIGINT NOT NULL,
	kind      TEXT   NOT NULL,
	detail    TEXT   NOT NULL DEFAULT ''
);
CREATE INDEX events_by_target_time ON events (target_id, time_ns);
