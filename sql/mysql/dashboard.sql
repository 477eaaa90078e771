-- `batchq dashboard` on MySQL/MariaDB: plain SELECTs in autocommit, ages on the server's clock.
-- A page of a queue's jobs in one state walks batchq_job_claim (queue, status, priority DESC,
-- run_at, id) from where the last page stopped (keyset paging, never OFFSET): the claim's own
-- order, and a page reads about a page's rows however long the queue. A page that ends inside a
-- priority continues with dashboard_jobs_same_priority, then dashboard_jobs_lower_priority. The
-- task filter is checked on the rows the walk reads. run_at_text is run_at as text: the next page's
-- link carries it exactly (PostgreSQL's 'infinity', written by hand, too).

-- name: dashboard_jobs_lower_priority
-- Up to %(limit)s jobs of a queue in one status at priorities below %(priority)s, in claim order.
-- The run_at bound excludes nothing (DATETIME starts at year 1): without it MariaDB 10.11 reads by
-- ref on (queue, status) from the highest priority down, dropping each row above the bound inside
-- InnoDB (666,704 index entries read for a page below two priorities of a million jobs, measured
-- by tests/dialect/mysql/test_dashboard_paging.py), where with it it seeks to the priority.
SELECT id, task, CAST(status AS CHAR) AS status, priority, CAST(run_at AS CHAR) AS run_at_text, error_count, max_errors, locked_by,
       serializer, LENGTH(payload) AS payload_bytes,
       TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), run_at) / 1e6 AS due_in_seconds
FROM batchq_job
WHERE queue = %(queue)s AND status = %(status)s AND priority < %(priority)s
  AND run_at >= '0001-01-01'
  AND (%(task)s IS NULL OR task = %(task)s)
ORDER BY priority DESC, run_at, id
LIMIT %(limit)s;

-- name: dashboard_jobs_same_priority
-- Up to %(limit)s jobs of a queue in one status at priority %(priority)s after (run_at, id). The
-- priority is a one-value range, not `=`, and the ORDER BY names it: with `=`, MariaDB reads the
-- priority's rows by ref from their start and drops those before run_at one by one inside InnoDB
-- (28 ms at row 500,000 of 1,000,000, measured with ANALYZE), where this seeks to (priority, run_at).
SELECT id, task, CAST(status AS CHAR) AS status, priority, CAST(run_at AS CHAR) AS run_at_text, error_count, max_errors, locked_by,
       serializer, LENGTH(payload) AS payload_bytes,
       TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), run_at) / 1e6 AS due_in_seconds
FROM batchq_job
WHERE queue = %(queue)s AND status = %(status)s AND priority >= %(priority)s AND priority <= %(priority)s
  AND run_at >= %(run_at)s AND (run_at > %(run_at)s OR id > %(id)s)
  AND (%(task)s IS NULL OR task = %(task)s)
ORDER BY priority DESC, run_at, id
LIMIT %(limit)s;

-- name: dashboard_job_payload
-- One job's stored payload and serializer, for display (never unpickled).
SELECT serializer, payload FROM batchq_job WHERE id = %(id)s;

-- name: dashboard_workers
-- The workers running jobs now (locked_by of the processing rows, through batchq_job_due's
-- status prefix): how many each runs and the age of its oldest claim, in seconds.
SELECT locked_by, COUNT(*) AS jobs,
       TIMESTAMPDIFF(MICROSECOND, MIN(processing_at), UTC_TIMESTAMP(6)) / 1e6 AS oldest_seconds
FROM batchq_job
WHERE status = 'processing'
GROUP BY locked_by
ORDER BY locked_by;
