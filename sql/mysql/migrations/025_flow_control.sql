-- Flow control (issue 27): a job queue's rate limit (at most rate_limit jobs start in any window
-- of rate_period seconds) and running limit (at most max_running jobs of it run at once), set by
-- Queue.configure; NULL: no limit. Workers claim from a queue with a limit through the limited
-- claim (batchq.flow), which locks the queue's row first; queues without limits claim as before.
-- Nullable columns at the table's end: added instantly (InnoDB).
ALTER TABLE batchq_queue ADD COLUMN rate_limit INT UNSIGNED NULL,
    ADD COLUMN rate_period DOUBLE NULL,
    ADD COLUMN max_running INT UNSIGNED NULL;

-- The starts of the jobs of rate-limited queues, at their claim's time (the job's processing_at):
-- the limited claim counts those of the last rate_period and deletes older ones. A primary key
-- of its own (Galera replicates only tables that have one). A new table: nothing live is touched.
CREATE TABLE IF NOT EXISTS batchq_queue_start (
    id         BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    queue      VARCHAR(64) NOT NULL,
    started_at DATETIME(6) NOT NULL,
    PRIMARY KEY (id),
    KEY batchq_queue_start_window (queue, started_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
