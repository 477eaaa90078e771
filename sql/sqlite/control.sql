-- Control from inside a task (batchq.jobs.control): the finishes of a job whose task raised
-- batchq.Snooze or batchq.Discard, or an exception its @task(retry_on=, discard_on=) says is not
-- worth another try. Each is fenced by the claim's token, as job_error is.

-- name: job_snooze
-- The task raised Snooze: the job goes back for :delay seconds, its try not counted (error_count,
-- last_error and the last try's figures untouched), its snoozes counted. Waiting, a job with a
-- concurrency key gives its slot back, as after a failure. Matches nothing once the job has
-- snoozed :max_snoozes times (the worker then fails it for good with job_discard) or a sweep
-- took it back.
UPDATE batchq_job
SET status = CASE WHEN :delay > 0 AND concurrency_key IS NOT NULL THEN 'blocked'
                  WHEN :delay > 0 THEN 'scheduled' ELSE 'ready' END,
    snoozes = snoozes + 1, snoozed_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    run_at = strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :delay)),
    processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE id = :id AND claim_token = :token AND snoozes < :max_snoozes;

-- name: job_discard
-- The try failed and is not to be retried (Discard, discard_on, retry_on, too many snoozes):
-- counted as job_error counts it, with its figures, and failed for good whatever tries are left.
UPDATE batchq_job
SET status = 'failed',
    error_count = CASE WHEN error_count < 65535 THEN error_count + 1 ELSE error_count END,
    last_error = :error, error_class = :error_class, error_fingerprint = :fingerprint, last_error_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    last_worker = locked_by, last_started_at = processing_at, last_wall_seconds = :wall,
    last_cpu_seconds = :cpu, last_memory_peak_bytes = :peak, last_memory_growth_bytes = :growth,
    processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE id = :id AND claim_token = :token;
