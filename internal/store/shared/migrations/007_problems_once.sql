-- Version 7: a problem's text kept once, each capture only what is its
-- own, as the embedded store's version 6. Before, every capture copied
-- the title, location, cause and evidence of each of its findings into
-- findings: 630 B a finding with its indexes, half the database.
--
-- problems holds one row per target and cause key, kind and site: the
-- latest capture's title and evidence, the first and last time a capture
-- showed it and how many did. sightings holds, per capture, one row per
-- finding in result.json's order: the problem and its severity in that
-- capture (rows go with their entry). A finding of an older capture reads
-- with its problem's latest title and evidence. findings keeps the
-- findings of the diagnosis over the series (no entry), and nothing else.
-- A sighting names its problem without a foreign key, and no index
-- leads with problem_id: either would cost every sighting bytes (or a
-- scan of them all for each problem removed). A problem's captures are
-- found through its target's entries between its first_ns and last_ns,
-- which is how retention tells that no capture shows it any more.
CREATE TABLE problems (
	id        BIGSERIAL PRIMARY KEY,
	target_id BIGINT NOT NULL REFERENCES targets (id),
	first_ns  BIGINT NOT NULL,
	last_ns   BIGINT NOT NULL,
	captures  BIGINT NOT NULL,
	cause     TEXT   NOT NULL,
	kind      TEXT   NOT NULL,
	location  TEXT   NOT NULL,
	title     TEXT   NOT NULL,
	evidence  TEXT   NOT NULL DEFAULT '',
	UNIQUE (target_id, cause, kind, location)
);

CREATE TABLE sightings (
	entry_id   BIGINT   NOT NULL REFERENCES entries (id) ON DELETE CASCADE,
	problem_id BIGINT   NOT NULL,
	ord        SMALLINT NOT NULL,
	severity   TEXT     NOT NULL,
	PRIMARY KEY (entry_id, ord)
);

-- The findings of entries move over: one problem per target, cause, kind
-- and site, with the newest finding's title and evidence.
INSERT INTO problems (target_id, cause, kind, location, title, evidence, first_ns, last_ns, captures)
SELECT l.target_id, l.cause, l.kind, l.location, l.title, l.evidence, g.first_ns, g.last_ns, g.captures
FROM (SELECT target_id, cause, kind, location,
		MIN(time_ns) AS first_ns, MAX(time_ns) AS last_ns, COUNT(DISTINCT entry_id) AS captures
	FROM findings WHERE entry_id IS NOT NULL
	GROUP BY target_id, cause, kind, location) g
JOIN (SELECT target_id, cause, kind, location, title, evidence,
		ROW_NUMBER() OVER (PARTITION BY target_id, cause, kind, location ORDER BY time_ns DESC, id DESC) AS n
	FROM findings WHERE entry_id IS NOT NULL) l
	ON l.n = 1 AND l.target_id = g.target_id AND l.cause = g.cause AND l.kind = g.kind AND l.location = g.location;

INSERT INTO sightings (entry_id, ord, problem_id, severity)
SELECT f.entry_id, ROW_NUMBER() OVER (PARTITION BY f.entry_id ORDER BY f.id) - 1, p.id, f.severity
FROM findings f JOIN problems p
	ON p.target_id = f.target_id AND p.cause = f.cause AND p.kind = f.kind AND p.location = f.location
WHERE f.entry_id IS NOT NULL;

DELETE FROM findings WHERE entry_id IS NOT NULL;
