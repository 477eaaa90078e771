-- Flow control (issue 27): a job queue's rate limit (at most rate_limit jobs start in any window
-- of rate_period seconds) and running limit (at most max_running jobs of it run at once), set by
-- Queue.configure; NULL: no limit. Workers claim from a queue with a limit through the limited
-- claim (batchq.flow), which locks the queue's row first; queues without limits claim as before.
-- Nullable without a default: a change of the catalog only.
ALTER TABLE batchq_queue ADD COLUMN IF NOT EXISTS rate_limit INTEGER NULL;
ALTER TABLE batchq_queue ADD COLUMN IF NOT EXISTS rate_period DOUBLE PRECISION NULL;
ALTER TABLE batchq_queue ADD COLUMN IF NOT EXISTS max_running INTEGER NULL;

-- The starts of the jobs of rate-limited queues, at their claim's time (the job's processing_at):
-- the limited claim counts those of the last rate_period and deletes older ones. A new table:
-- nothing live is touched.
CREATE TABLE IF NOT EXISTS batchq_queue_start (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue      VARCHAR(64) NOT NULL,
    started_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS batchq_queue_start_window ON batchq_queue_start (queue, started_at);
