-- Version 2: what problems need of the index. A finding's cause key
-- (findings of successive captures sharing it are one problem) and its
-- evidence (compact JSON: the problem's trend and latest figures); an
-- entry's load rate (captures under comparable load only resolve a
-- problem). Rows indexed before have an empty cause and evidence, and no
-- load rate.
ALTER TABLE findings ADD COLUMN cause TEXT NOT NULL DEFAULT '';
ALTER TABLE findings ADD COLUMN evidence TEXT NOT NULL DEFAULT '';
ALTER TABLE entries ADD COLUMN load_rate REAL;
