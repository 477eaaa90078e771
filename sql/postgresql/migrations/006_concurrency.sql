-- Per-key concurrency: a job enqueued with a concurrency_key waits as 'blocked' until fewer than
-- its concurrency_limit jobs of that key are 'ready' or 'processing'; then one worker at a time
-- (jobs_unblock) makes it ready. batchq_job_concurrency, partial, counts a key's active jobs
-- and costs jobs without a key nothing.
ALTER TABLE batchq_job DROP CONSTRAINT IF EXISTS batchq_job_status_check;
ALTER TABLE batchq_job ADD CONSTRAINT batchq_job_status_check
    CHECK (status IN ('ready', 'processing', 'failed', 'scheduled', 'blocked'));
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS concurrency_key VARCHAR(255) NULL;
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS concurrency_limit INTEGER NULL
    CHECK (concurrency_limit BETWEEN 1 AND 65535);
CREATE INDEX IF NOT EXISTS batchq_job_concurrency ON batchq_job (concurrency_key, status)
    WHERE concurrency_key IS NOT NULL;
