-- `batchq metrics` on MySQL/MariaDB: plain SELECTs in autocommit, ages on the server's clock.

-- name: metrics_jobs
-- Per queue and status: jobs, how many are due, the age of the oldest due one (since its run_at)
-- and of the oldest claim, in seconds (NULL where there is none).
SELECT queue, CAST(status AS CHAR) AS status, COUNT(*) AS jobs,
       SUM(run_at <= UTC_TIMESTAMP(6)) AS due,
       TIMESTAMPDIFF(MICROSECOND, MIN(IF(run_at <= UTC_TIMESTAMP(6), run_at, NULL)), UTC_TIMESTAMP(6))
       / 1e6 AS oldest_due_seconds,
       TIMESTAMPDIFF(MICROSECOND, MIN(processing_at), UTC_TIMESTAMP(6)) / 1e6 AS oldest_processing_seconds
FROM batchq_job
GROUP BY queue, status;

-- name: metrics_queues
-- Every queue batchq_queue knows (paused once, or resumed), and whether workers skip it.
SELECT name, paused = 1 AS paused FROM batchq_queue;

-- name: metrics_locks_held
-- Lock and semaphore rows held now (not free, and not expired on the server's clock).
SELECT COUNT(*) AS held FROM batchq_lock WHERE state <> 'free' AND expire_at > UTC_TIMESTAMP(6);

-- name: metrics_history
-- Jobs kept in history that finished in the last %(window)s seconds, per queue, task and outcome,
-- with their summed and largest wall times and summed CPU times (a range of batchq_history_finished).
SELECT queue, task, CAST(outcome AS CHAR) AS outcome, COUNT(*) AS jobs,
       SUM(wall_seconds) AS wall_seconds, MAX(wall_seconds) AS wall_max_seconds,
       SUM(cpu_seconds) AS cpu_seconds
FROM batchq_history
WHERE finished_at >= UTC_TIMESTAMP(6) - INTERVAL ROUND(%(window)s * 1000000) MICROSECOND
GROUP BY queue, task, outcome;
