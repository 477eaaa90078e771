-- Jobs waiting for their run_at (a delay, a retry backoff) get a status of their own, so that
-- every 'ready' row is due: the claim takes the first unlocked row of batchq_job_claim, with no
-- search for the highest priority that has a due job. Workers move due 'scheduled' rows to
-- 'ready' (jobs_promote) through batchq_job_due, which replaces the (status, processing_at)
-- index: gc-processing and stats read the few processing rows through its status prefix.
-- The NOTIFY trigger fires when a promotion makes a job ready, as for any job that becomes due.
ALTER TABLE batchq_job DROP CONSTRAINT IF EXISTS batchq_job_status_check;
ALTER TABLE batchq_job ADD CONSTRAINT batchq_job_status_check
    CHECK (status IN ('ready', 'processing', 'failed', 'scheduled'));
UPDATE batchq_job SET status = 'scheduled' WHERE status = 'ready' AND run_at > statement_timestamp();
DROP INDEX IF EXISTS batchq_job_status;
CREATE INDEX IF NOT EXISTS batchq_job_due ON batchq_job (status, run_at);
