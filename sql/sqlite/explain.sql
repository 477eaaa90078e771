-- `batchq explain` on SQLite: plain SELECTs in autocommit, so no BEGIN IMMEDIATE and no lock a
-- worker could wait on (WAL: readers never block the writer). Times come back as the stored
-- text ('YYYY-MM-DD HH:MM:SS.SSS', UTC); ages are on the database's clock ('now').

-- name: explain_job
-- One job with its times on the database's clock and whether its queue is paused (as workers
-- read it: paused = 1). due is the claim's own test, so a row written by hand reads as it claims.
-- Its progress (batchq.jobs.reporting): the message read no longer than 201 characters, which
-- tells a longer one written by hand.
SELECT j.id, j.queue, j.task, j.status, j.priority, j.error_count, j.max_errors, j.last_error,
       j.locked_by, j.run_at, j.processing_at, j.created_at,
       j.run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now') AS due,
       (julianday(j.run_at) - julianday('now')) * 86400.0 AS due_in_seconds,
       (julianday('now') - julianday(j.processing_at)) * 86400.0 AS running_seconds,
       round((julianday(j.run_at) - julianday(j.created_at)) * 86400.0, 3) AS delay_seconds,
       j.expires_at, (julianday(j.expires_at) - julianday('now')) * 86400.0 AS expires_in_seconds,
       COALESCE(q.paused = 1, 0) AS paused,
       j.progress, substr(j.progress_message, 1, 201) AS progress_message, j.progress_at,
       (julianday('now') - julianday(j.progress_at)) * 86400.0 AS progress_age_seconds,
       j.progress_at >= j.processing_at AS progress_this_try,
       j.concurrency_key, j.concurrency_limit, j.unique_key, j.task_version, j.version_wait, j.backoff, j.parents_left,
       j.rate_key, j.rate_limit, j.rate_period,
       (j.rate_held_at IS NOT NULL AND (j.last_error_at IS NULL OR j.rate_held_at >= j.last_error_at)
        AND (j.snoozed_at IS NULL OR j.rate_held_at >= j.snoozed_at)) AS rate_held_last,
       j.snoozes, (j.snoozed_at IS NOT NULL AND (j.last_error_at IS NULL OR j.snoozed_at >= j.last_error_at)) AS snoozed_last,
       (SELECT COUNT(*) FROM batchq_job AS a
        WHERE a.concurrency_key = j.concurrency_key
          AND a.status IN ('ready', 'processing')) AS key_active
FROM batchq_job AS j LEFT JOIN batchq_queue AS q ON q.name = j.queue
WHERE j.id = :id;

-- name: explain_jobs_ahead
-- How many due jobs of the job's queue a claim takes before it: the claim's order (priority
-- DESC, run_at, id), as three ranges of batchq_job_claim. Due 'scheduled' rows count: a worker
-- promotes them within a second, into the same order.
SELECT (SELECT COUNT(*) FROM batchq_job AS o
        WHERE o.queue = j.queue AND o.status IN ('ready', 'scheduled')
          AND o.run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now') AND o.priority > j.priority)
     + (SELECT COUNT(*) FROM batchq_job AS o
        WHERE o.queue = j.queue AND o.status IN ('ready', 'scheduled')
          AND o.run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
          AND o.priority = j.priority AND o.run_at < j.run_at)
     + (SELECT COUNT(*) FROM batchq_job AS o
        WHERE o.queue = j.queue AND o.status IN ('ready', 'scheduled')
          AND o.priority = j.priority AND o.run_at = j.run_at AND o.id < j.id
          AND o.run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')) AS ahead
FROM batchq_job AS j
WHERE j.id = :id;

-- name: explain_key_holders
-- The jobs holding a concurrency key's slots (ready or running), oldest first: a few, for a human.
SELECT id, status, locked_by
FROM batchq_job
WHERE concurrency_key = :key AND status IN ('ready', 'processing')
ORDER BY id
LIMIT 5;
