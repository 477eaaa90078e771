-- `batchq metrics` on SQLite: plain SELECTs in autocommit, ages on the database's clock ('now').

-- name: metrics_jobs
-- Per queue and status: jobs, how many are due, the age of the oldest due one (since its run_at)
-- and of the oldest claim, in seconds (NULL where there is none, or its time is not a time).
SELECT queue, status, COUNT(*) AS jobs,
       SUM(run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')) AS due,
       (julianday('now')
        - julianday(MIN(CASE WHEN run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now') THEN run_at END)))
       * 86400.0 AS oldest_due_seconds,
       (julianday('now') - julianday(MIN(processing_at))) * 86400.0 AS oldest_processing_seconds
FROM batchq_job
GROUP BY queue, status;

-- name: metrics_queues
-- Every queue batchq_queue knows (paused once, or resumed), and whether workers skip it.
SELECT name, paused = 1 AS paused FROM batchq_queue;

-- name: metrics_locks_held
-- Lock and semaphore rows held now (not free, and not expired on the database's clock).
SELECT COUNT(*) AS held FROM batchq_lock
WHERE state <> 'free' AND expire_at > strftime('%Y-%m-%d %H:%M:%f', 'now');

-- name: metrics_history
-- Jobs kept in history that finished in the last :window seconds, per queue, task and outcome,
-- with their summed and largest wall times and summed CPU times (a range of batchq_history_finished).
SELECT queue, task, outcome, COUNT(*) AS jobs,
       SUM(wall_seconds) AS wall_seconds, MAX(wall_seconds) AS wall_max_seconds,
       SUM(cpu_seconds) AS cpu_seconds
FROM batchq_history
WHERE finished_at >= strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -:window))
GROUP BY queue, task, outcome;
