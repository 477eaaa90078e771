-- Jobs waiting for their run_at (a delay, a retry backoff) get a status of their own, so that
-- every 'ready' row is due: the claim takes the first unlocked row of batchq_job_claim, with no
-- search for the highest priority that has a due job. Workers move due 'scheduled' rows to
-- 'ready' (jobs_promote) through batchq_job_due, which replaces the (status, processing_at)
-- index: gc-processing and stats read the few processing rows through its status prefix.
ALTER TABLE batchq_job
    MODIFY status ENUM('ready', 'processing', 'failed', 'scheduled') NOT NULL DEFAULT 'ready',
    DROP KEY batchq_job_status,
    ADD KEY batchq_job_due (status, run_at);

UPDATE batchq_job SET status = 'scheduled' WHERE status = 'ready' AND run_at > UTC_TIMESTAMP(6);
