-- Per-key rate limits (issue 27): a job enqueued with a rate_key starts only while fewer than
-- rate_limit jobs of its key started in the last rate_period seconds, across every worker
-- (batchq.policy.flow). Checked by the worker as the job starts, in a transaction that locks the
-- key's row; a job over the limit goes back, uncounted, to start at its key's next slot.
-- Nullable columns at the table's end, with no index: added instantly (InnoDB), and a job
-- without a key enters no index for them. rate_held_at: when its key's rate last held it back.
ALTER TABLE batchq_job ADD COLUMN rate_key VARCHAR(255) NULL,
    ADD COLUMN rate_limit INT UNSIGNED NULL,
    ADD COLUMN rate_period DOUBLE NULL,
    ADD COLUMN rate_held_at DATETIME(6) NULL;

-- One row per key ever used, locked by each check. The jobs held back by the rate come back in
-- slots of up to rate_limit jobs a period apart (next_slot_at, and slot_fill jobs given it so
-- far), as the window lets them in, rather than all at once.
CREATE TABLE IF NOT EXISTS batchq_rate_key (
    rate_key     VARCHAR(255) NOT NULL,
    next_slot_at DATETIME(6) NULL,
    slot_fill    INT UNSIGNED NOT NULL DEFAULT 0,
    PRIMARY KEY (rate_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- A key's starts of the last period (older ones are deleted by the checks). A primary key of its
-- own (Galera replicates only tables that have one).
CREATE TABLE IF NOT EXISTS batchq_rate_key_start (
    id         BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    rate_key   VARCHAR(255) NOT NULL,
    started_at DATETIME(6) NOT NULL,
    PRIMARY KEY (id),
    KEY batchq_rate_key_start_window (rate_key, started_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
