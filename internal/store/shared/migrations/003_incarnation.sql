-- Version 3: each member's incarnation, a token its process draws when it
-- joins. Two processes given one member name (a watcher restarted while
-- the old one, cut off, still runs) are told apart: a heartbeat renews
-- only its own incarnation's row (or takes over an expired one), and a
-- claim is marked done only by the incarnation that holds the row.
ALTER TABLE members ADD COLUMN incarnation TEXT NOT NULL DEFAULT '';
