-- Version 5: the slot of a scheduled run, as the embedded store's version
-- 3. A run is dated at its window's start (time_ns); slot_ns is the
-- instant of the schedule it was captured for, at or before it: time_ns −
-- slot_ns is how late it began. NULL for bundles, and for runs indexed
-- before.
ALTER TABLE entries ADD COLUMN slot_ns BIGINT;
