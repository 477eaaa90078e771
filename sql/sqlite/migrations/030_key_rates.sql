-- Per-key rate limits (issue 27): a job enqueued with a rate_key starts only while fewer than
-- rate_limit jobs of its key started in the last rate_period seconds, across every worker
-- (batchq.policy.flow). Checked by the worker as the job starts, inside BEGIN IMMEDIATE; a job
-- over the limit goes back, uncounted, to start at its key's next slot.
ALTER TABLE batchq_job ADD COLUMN rate_key TEXT NULL;
ALTER TABLE batchq_job ADD COLUMN rate_limit INTEGER NULL;
ALTER TABLE batchq_job ADD COLUMN rate_period REAL NULL;
-- When its key's rate last held it back (batchq explain says so).
ALTER TABLE batchq_job ADD COLUMN rate_held_at TEXT NULL;

-- One row per key ever used. The jobs held back by the rate come back in slots of up to
-- rate_limit jobs a period apart (next_slot_at, and slot_fill jobs given it so far), as the
-- window lets them in, rather than all at once.
CREATE TABLE IF NOT EXISTS batchq_rate_key (
    rate_key     TEXT PRIMARY KEY,
    next_slot_at TEXT NULL,
    slot_fill    INTEGER NOT NULL DEFAULT 0
);

-- A key's starts of the last period (older ones are deleted by the checks).
CREATE TABLE IF NOT EXISTS batchq_rate_key_start (
    id         INTEGER PRIMARY KEY,
    rate_key   TEXT NOT NULL,
    started_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS batchq_rate_key_start_window ON batchq_rate_key_start (rate_key, started_at);
