-- A worker's `run --heartbeat` (seconds; 0: off), so that `gc-processing --ghost-after` never
-- takes a live worker whose session sits idle between slower beats for a ghost: the sweep waits
-- at least two of that worker's own beats. NULL for a worker of an older version.
ALTER TABLE batchq_worker ADD COLUMN IF NOT EXISTS heartbeat_seconds DOUBLE PRECISION NULL;
