-- Per-key rate limits (issue 27): a job enqueued with a rate_key starts only while fewer than
-- rate_limit jobs of its key started in the last rate_period seconds, across every worker
-- (batchq.policy.flow). Checked by the worker as the job starts, in a transaction that locks the
-- key's row; a job over the limit goes back, uncounted, to start at its key's next slot.
-- Nullable columns with no default and no index: added without a table rewrite, and a job
-- without a key enters no index for them. rate_held_at: when its key's rate last held it back.
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS rate_key VARCHAR(255) NULL,
    ADD COLUMN IF NOT EXISTS rate_limit INTEGER NULL,
    ADD COLUMN IF NOT EXISTS rate_period DOUBLE PRECISION NULL,
    ADD COLUMN IF NOT EXISTS rate_held_at TIMESTAMPTZ NULL;

-- One row per key ever used, locked by each check. The jobs held back by the rate come back in
-- slots of up to rate_limit jobs a period apart (next_slot_at, and slot_fill jobs given it so
-- far), as the window lets them in, rather than all at once.
CREATE TABLE IF NOT EXISTS batchq_rate_key (
    rate_key     VARCHAR(255) PRIMARY KEY,
    next_slot_at TIMESTAMPTZ NULL,
    slot_fill    INTEGER NOT NULL DEFAULT 0
);

-- A key's starts of the last period (older ones are deleted by the checks).
CREATE TABLE IF NOT EXISTS batchq_rate_key_start (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rate_key   VARCHAR(255) NOT NULL,
    started_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS batchq_rate_key_start_window ON batchq_rate_key_start (rate_key, started_at);
