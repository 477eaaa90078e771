-- Per-key concurrency: a job enqueued with a concurrency_key waits as 'blocked' until fewer than
-- its concurrency_limit jobs of that key are 'ready' or 'processing'; then one worker at a time
-- (jobs_unblock) makes it ready. Adding an ENUM value at its end changes only metadata.
-- batchq_job_concurrency counts a key's active jobs for jobs_unblock.
ALTER TABLE batchq_job
    MODIFY status ENUM('ready', 'processing', 'failed', 'scheduled', 'blocked') NOT NULL DEFAULT 'ready',
    ADD COLUMN concurrency_key VARCHAR(255) NULL,
    ADD COLUMN concurrency_limit SMALLINT UNSIGNED NULL,
    ADD KEY batchq_job_concurrency (concurrency_key, status);
