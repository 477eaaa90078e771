-- `batchq explain` on MySQL/MariaDB: plain SELECTs in autocommit (consistent reads, no FOR
-- UPDATE), so no lock a worker could wait on. Times come back as text ('YYYY-MM-DD
-- HH:MM:SS.ffffff', UTC): a zero date stored by a non-strict session stays readable.

-- name: explain_job
-- One job with its times on the server's clock and whether its queue is paused (as workers
-- read it: paused = 1). due is the claim's own test.
-- Its progress (batchq.jobs.reporting): the message read no longer than 201 characters, which
-- tells a longer one written by hand.
SELECT j.id, j.queue, j.task, CAST(j.status AS CHAR) AS status, j.priority, j.error_count,
       j.max_errors, j.last_error, j.locked_by,
       DATE_FORMAT(j.run_at, '%%Y-%%m-%%d %%H:%%i:%%s.%%f') AS run_at,
       DATE_FORMAT(j.processing_at, '%%Y-%%m-%%d %%H:%%i:%%s.%%f') AS processing_at,
       DATE_FORMAT(j.created_at, '%%Y-%%m-%%d %%H:%%i:%%s.%%f') AS created_at,
       j.run_at <= UTC_TIMESTAMP(6) AS due,
       TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), j.run_at) / 1e6 AS due_in_seconds,
       TIMESTAMPDIFF(MICROSECOND, j.processing_at, UTC_TIMESTAMP(6)) / 1e6 AS running_seconds,
       TIMESTAMPDIFF(MICROSECOND, j.created_at, j.run_at) / 1e6 AS delay_seconds,
       DATE_FORMAT(j.expires_at, '%%Y-%%m-%%d %%H:%%i:%%s.%%f') AS expires_at,
       TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), j.expires_at) / 1e6 AS expires_in_seconds,
       COALESCE(q.paused = 1, 0) AS paused,
       j.progress, SUBSTRING(j.progress_message, 1, 201) AS progress_message,
       DATE_FORMAT(j.progress_at, '%%Y-%%m-%%d %%H:%%i:%%s.%%f') AS progress_at,
       TIMESTAMPDIFF(MICROSECOND, j.progress_at, UTC_TIMESTAMP(6)) / 1e6 AS progress_age_seconds,
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
WHERE j.id = %(id)s;

-- name: explain_jobs_ahead
-- How many due jobs of the job's queue a claim takes before it: the claim's order (priority
-- DESC, run_at, id), as three ranges of batchq_job_claim. Due 'scheduled' rows count: a worker
-- promotes them within a second, into the same order.
SELECT (SELECT COUNT(*) FROM batchq_job AS o
        WHERE o.queue = j.queue AND o.status IN ('ready', 'scheduled')
          AND o.run_at <= UTC_TIMESTAMP(6) AND o.priority > j.priority)
     + (SELECT COUNT(*) FROM batchq_job AS o
        WHERE o.queue = j.queue AND o.status IN ('ready', 'scheduled')
          AND o.run_at <= UTC_TIMESTAMP(6) AND o.priority = j.priority AND o.run_at < j.run_at)
     + (SELECT COUNT(*) FROM batchq_job AS o
        WHERE o.queue = j.queue AND o.status IN ('ready', 'scheduled')
          AND o.priority = j.priority AND o.run_at = j.run_at AND o.id < j.id
          AND o.run_at <= UTC_TIMESTAMP(6)) AS ahead
FROM batchq_job AS j
WHERE j.id = %(id)s;

-- name: explain_key_holders
-- The jobs holding a concurrency key's slots (ready or running), oldest first: a few, for a human.
SELECT id, CAST(status AS CHAR) AS status, locked_by
FROM batchq_job
WHERE concurrency_key = %(key)s AND status IN ('ready', 'processing')
ORDER BY id
LIMIT 5;
