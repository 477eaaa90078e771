-- The dashboard's job actions on PostgreSQL (batchq.dashboard.actions): job operations on a
-- job's row by its id, kept apart from the dashboard's reads (dashboard.sql, the inspection
-- store) until a job store owns them.

-- name: dashboard_job_run_now
-- A delayed job (scheduled: a delay or a retry backoff) made due now; any other state is left, and so
-- is a job waiting for its parents (batchq.dependencies).
UPDATE batchq_job SET status = 'ready', run_at = statement_timestamp()
WHERE id = %(id)s AND status = 'scheduled' AND coalesce(parents_left, 0) = 0;

-- name: dashboard_job_failed
-- One failed job as jobs_failed lists it, by its primary key: a job page's "retry now" requeues
-- it without reading every failed job (jobs_failed took a second with 50,000 failed).
SELECT id, queue, task, error_count, max_errors, last_error, created_at, concurrency_key,
       error_fingerprint, last_error_at, unique_key, last_worker, last_started_at, last_wall_seconds,
       last_cpu_seconds, last_memory_peak_bytes, last_memory_growth_bytes
FROM batchq_job
WHERE id = %(id)s AND status = 'failed';
