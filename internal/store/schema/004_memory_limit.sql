-- Version 4: the memory limit of a target's cgroup, a series beside its
-- RSS, which the target page draws the RSS against.
INSERT INTO metrics (id, name, unit) VALUES (8, 'memory_limit', 'bytes');
