-- Version 2: the fleet's membership and its claims on scheduled slots
-- (internal/fleet). Times here are the database's clock, so that the
-- watchers' clocks never decide who is alive.

-- members holds one row per watcher that heartbeats: alive while
-- expires is in the future.
CREATE TABLE members (
	id      TEXT        PRIMARY KEY,
	started TIMESTAMPTZ NOT NULL DEFAULT now(),
	expires TIMESTAMPTZ NOT NULL
);

-- slots holds the claim on each scheduled slot of each target: one
-- watcher captures it. A claim not done whose member is no longer alive
-- may be taken over.
CREATE TABLE slots (
	target  TEXT        NOT NULL,
	slot_ns BIGINT      NOT NULL,
	member  TEXT        NOT NULL,
	claimed TIMESTAMPTZ NOT NULL DEFAULT now(),
	done    BOOLEAN     NOT NULL DEFAULT false,
	PRIMARY KEY (target, slot_ns)
);
CREATE INDEX slots_by_claimed ON slots (claimed);
