-- `batchq metrics` on PostgreSQL: plain SELECTs in autocommit, ages on the server's clock.

-- name: metrics_jobs
-- Per queue and status: jobs, how many are due, the age of the oldest due one (since its run_at)
-- and of the oldest claim, in seconds (NULL where there is none; an infinite time, written by
-- hand, has no age).
SELECT queue, status, COUNT(*) AS jobs,
       COUNT(*) FILTER (WHERE run_at <= statement_timestamp()) AS due,
       EXTRACT(EPOCH FROM statement_timestamp()
               - MIN(run_at) FILTER (WHERE run_at <= statement_timestamp() AND isfinite(run_at))
       )::float8 AS oldest_due_seconds,
       EXTRACT(EPOCH FROM statement_timestamp()
               - MIN(processing_at) FILTER (WHERE isfinite(processing_at)))::float8 AS oldest_processing_seconds
FROM batchq_job
GROUP BY queue, status;

-- name: metrics_queues
-- Every queue batchq_queue knows (paused once, or resumed), and whether workers skip it.
SELECT name, paused FROM batchq_queue;

-- name: metrics_locks_held
-- Lock and semaphore rows held now (not free, and not expired on the server's clock).
SELECT COUNT(*) AS held FROM batchq_lock WHERE state <> 'free' AND expire_at > statement_timestamp();

-- name: metrics_history
-- Jobs kept in history that finished in the last %(window)s seconds, per queue, task and outcome,
-- with their summed and largest wall times and summed CPU times (a range of batchq_history_finished).
SELECT queue, task, outcome, COUNT(*) AS jobs,
       SUM(wall_seconds) AS wall_seconds, MAX(wall_seconds) AS wall_max_seconds,
       SUM(cpu_seconds) AS cpu_seconds
FROM batchq_history
WHERE finished_at >= statement_timestamp() - %(window)s::float8 * interval '1 second'
GROUP BY queue, task, outcome;
