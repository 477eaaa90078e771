-- A worker's `run --heartbeat` (seconds; 0: off), so that `gc-processing --ghost-after` never
-- takes a live worker whose session sits idle between slower beats for a ghost: the sweep waits
-- at least two of that worker's own beats. NULL for a worker of an older version. (SQLite has no
-- sessions and no ghosts: the column keeps the dialects' schemas alike.)
ALTER TABLE batchq_worker ADD COLUMN heartbeat_seconds REAL NULL;
