-- `batchq explain` on PostgreSQL: plain SELECTs in autocommit (no FOR UPDATE), so no lock a
-- worker could wait on. Times come back as text ('YYYY-MM-DD HH24:MI:SS.US', UTC), and an
-- infinite one (written by hand) as 'infinity': the driver cannot load it as a datetime.

-- name: explain_job
-- One job with its times on the server's clock and whether its queue is paused. due is the
-- claim's own test; an infinite time has no age.
-- Its progress (batchq.jobs.reporting): the message read no longer than 201 characters, which
-- tells a longer one written by hand.
SELECT j.id, j.queue, j.task, j.status, j.priority, j.error_count, j.max_errors, j.last_error,
       j.locked_by,
       CASE WHEN isfinite(j.run_at) THEN to_char(j.run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')
            ELSE j.run_at::text END AS run_at,
       CASE WHEN isfinite(j.processing_at)
            THEN to_char(j.processing_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')
            ELSE j.processing_at::text END AS processing_at,
       CASE WHEN isfinite(j.created_at)
            THEN to_char(j.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')
            ELSE j.created_at::text END AS created_at,
       j.run_at <= statement_timestamp() AS due,
       CASE WHEN isfinite(j.run_at)
            THEN EXTRACT(EPOCH FROM j.run_at - statement_timestamp())::float8 END AS due_in_seconds,
       CASE WHEN isfinite(j.processing_at)
            THEN EXTRACT(EPOCH FROM statement_timestamp() - j.processing_at)::float8 END AS running_seconds,
       CASE WHEN isfinite(j.run_at) AND isfinite(j.created_at)
            THEN EXTRACT(EPOCH FROM j.run_at - j.created_at)::float8 END AS delay_seconds,
       CASE WHEN isfinite(j.expires_at)
            THEN to_char(j.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')
            ELSE j.expires_at::text END AS expires_at,
       CASE WHEN isfinite(j.expires_at)
            THEN EXTRACT(EPOCH FROM j.expires_at - statement_timestamp())::float8 END AS expires_in_seconds,
       COALESCE(q.paused, false) AS paused,
       j.progress, left(j.progress_message, 201) AS progress_message,
       CASE WHEN isfinite(j.progress_at)
            THEN to_char(j.progress_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')
            ELSE j.progress_at::text END AS progress_at,
       CASE WHEN isfinite(j.progress_at)
            THEN EXTRACT(EPOCH FROM statement_timestamp() - j.progress_at)::float8 END AS progress_age_seconds,
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
-- DESC, run_at, id), as three ranges of batchq_job_claim (its 'ready' rows). Due 'scheduled'
-- rows count too: a worker promotes them within a second, into the same order; they are few,
-- read through batchq_job_due (status, run_at).
SELECT (SELECT COUNT(*) FROM batchq_job AS o
        WHERE o.queue = j.queue AND o.status = 'ready'
          AND o.run_at <= statement_timestamp() AND o.priority > j.priority)
     + (SELECT COUNT(*) FROM batchq_job AS o
        WHERE o.queue = j.queue AND o.status = 'ready'
          AND o.run_at <= statement_timestamp() AND o.priority = j.priority AND o.run_at < j.run_at)
     + (SELECT COUNT(*) FROM batchq_job AS o
        WHERE o.queue = j.queue AND o.status = 'ready'
          AND o.priority = j.priority AND o.run_at = j.run_at AND o.id < j.id
          AND o.run_at <= statement_timestamp())
     + (SELECT COUNT(*) FROM batchq_job AS o
        WHERE o.status = 'scheduled' AND o.run_at <= statement_timestamp() AND o.queue = j.queue
          AND (o.priority > j.priority
               OR o.priority = j.priority AND (o.run_at < j.run_at OR o.run_at = j.run_at AND o.id < j.id)))
       AS ahead
FROM batchq_job AS j
WHERE j.id = %(id)s;

-- name: explain_key_holders
-- The jobs holding a concurrency key's slots (ready or running), oldest first: a few, for a human.
SELECT id, status, locked_by
FROM batchq_job
WHERE concurrency_key = %(key)s AND status IN ('ready', 'processing')
ORDER BY id
LIMIT 5;
