-- A running task's progress (batchq.progress): one UPDATE by primary key of the job's own row.

-- name: job_progress
-- The task's latest report, only while its try holds the claim (a job gc-processing took back
-- has another token or none: a zombie's late report changes nothing). No indexed column changes.
UPDATE batchq_job
SET progress = %(fraction)s, progress_message = %(message)s, progress_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND claim_token = %(token)s AND status = 'processing';
