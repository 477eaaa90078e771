-- Flow control (issue 27): a job queue's rate limit (at most rate_limit jobs start in any window
-- of rate_period seconds) and running limit (at most max_running jobs of it run at once), set by
-- Queue.configure; NULL: no limit. Workers claim from a queue with a limit through the limited
-- claim (batchq.flow), which takes the queue's row first; queues without limits claim as before.
ALTER TABLE batchq_queue ADD COLUMN rate_limit INTEGER NULL;
ALTER TABLE batchq_queue ADD COLUMN rate_period REAL NULL;
ALTER TABLE batchq_queue ADD COLUMN max_running INTEGER NULL;

-- The starts of the jobs of rate-limited queues, at their claim's time (the job's processing_at):
-- the limited claim counts those of the last rate_period and deletes older ones. A new table:
-- nothing live is touched.
CREATE TABLE IF NOT EXISTS batchq_queue_start (
    id         INTEGER PRIMARY KEY,
    queue      TEXT NOT NULL,
    started_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS batchq_queue_start_window ON batchq_queue_start (queue, started_at);
