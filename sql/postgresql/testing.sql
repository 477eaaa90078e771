-- Statements of batchq.testing (helpers for users' own test suites), on PostgreSQL.

-- name: testing_jobs
-- Every job row of a queue (every queue when NULL), of a task when given, oldest first, with
-- how many seconds until it is due (0 or less: due) on the database's clock.
SELECT id, queue, task, payload, serializer, status, priority, error_count, max_errors, last_error,
       EXTRACT(EPOCH FROM run_at - statement_timestamp())::float8 AS due_in
FROM batchq_job
WHERE (%(queue)s::text IS NULL OR queue = %(queue)s::text) AND (%(task)s::text IS NULL OR task = %(task)s::text)
ORDER BY id
LIMIT %(limit)s;

-- name: testing_make_due
-- drain(with_scheduled=...): the queue's waiting jobs due within %(within)s seconds (every one
-- when NULL) become due now (a delay, a retry's backoff); a worker's tick then promotes them.
UPDATE batchq_job SET run_at = statement_timestamp()
WHERE queue = %(queue)s AND (status = 'ready' OR status IN ('scheduled', 'blocked'))
  AND run_at > statement_timestamp()
  AND (%(within)s::float8 IS NULL OR run_at <= statement_timestamp() + %(within)s::float8 * interval '1 second');

-- name: testing_clear
-- The batchq_queue fixture on a server test database: the job queue's rows from earlier tests go.
DELETE FROM batchq_job;

-- name: testing_clear_queues
-- And the queues' settings (paused, bounds, types, keep_for).
DELETE FROM batchq_queue;

-- name: testing_clear_history
-- And the finished jobs kept in the history.
DELETE FROM batchq_history;
