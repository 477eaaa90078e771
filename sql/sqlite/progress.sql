-- A running task's progress (batchq.progress): one UPDATE by primary key of the job's own row.

-- name: job_progress
-- The task's latest report, only while its try holds the claim (a job gc-processing took back
-- has another token or none: a zombie's late report changes nothing). No indexed column changes.
UPDATE batchq_job
SET progress = :fraction, progress_message = :message,
    progress_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id = :id AND claim_token = :token AND status = 'processing';
