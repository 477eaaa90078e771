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

-- Search (batchq.dashboard.search): a task or text search reads a window of the newest
-- %(window)s rows of one status through batchq_job_due (status, run_at) walked backward, and
-- filters only those: a search of a table of millions reads %(window)s index entries and rows.
-- STRAIGHT_JOIN reads the window first and joins its rows back by primary key (eq_ref): left to
-- itself, MariaDB 10.11 may scan the whole table and look each row up in the window instead
-- (tests/contract/test_dashboard_search_plans.py saw it on small tables).
-- Text is a case-sensitive substring compared as bytes (LOCATE on the binary payload: no
-- wildcard, no decoding), in a JSON payload's first %(payload_bytes)s bytes or
-- in the last error; a pickled or other binary payload is not searched (only text is).

-- name: dashboard_search_jobs
-- The newest matches among the newest %(window)s jobs of one status.
{{search_jobs_head}}
FROM (SELECT id FROM batchq_job WHERE status = %(status)s ORDER BY run_at DESC LIMIT %(window)s) AS w
{{search_jobs_tail}}

-- name: dashboard_search_jobs_window
-- How many rows the window holds, up to %(window)s (one more than searched: older ones exist).
SELECT COUNT(*) AS n
FROM (SELECT id FROM batchq_job WHERE status = %(status)s ORDER BY run_at DESC LIMIT %(window)s) AS w;

-- name: dashboard_search_queue_jobs
-- The same in one queue: its window is batchq_job_claim walked backward (the last rows in claim
-- order: the lowest priority first, then the latest due), so a small queue beside a large one is
-- searched whole.
{{search_jobs_head}}
FROM (SELECT id FROM batchq_job WHERE queue = %(queue)s AND status = %(status)s
      ORDER BY priority, run_at DESC, id DESC LIMIT %(window)s) AS w
{{search_jobs_tail}}

-- name: dashboard_search_queue_jobs_window
-- How many rows the queue's window holds, up to the window.
SELECT COUNT(*) AS n
FROM (SELECT id FROM batchq_job WHERE queue = %(queue)s AND status = %(status)s
      ORDER BY priority, run_at DESC, id DESC LIMIT %(window)s) AS w;

-- name: dashboard_search_history
-- The newest matches among the newest %(window)s finished jobs kept (batchq_history_finished).
{{search_history_head}}
FROM (SELECT id FROM batchq_history ORDER BY finished_at DESC LIMIT %(window)s) AS w
{{search_history_tail}}

-- name: dashboard_search_history_window
-- How many rows the history's window holds, up to %(window)s.
SELECT COUNT(*) AS n FROM (SELECT id FROM batchq_history ORDER BY finished_at DESC LIMIT %(window)s) AS w;

-- name: dashboard_search_queue_history
-- The same in one queue's history (batchq_history_queue (queue, finished_at)).
{{search_history_head}}
FROM (SELECT id FROM batchq_history WHERE queue = %(queue)s ORDER BY finished_at DESC LIMIT %(window)s) AS w
{{search_history_tail}}

-- name: dashboard_search_queue_history_window
-- How many rows the queue's history window holds, up to the window.
SELECT COUNT(*) AS n FROM (SELECT id FROM batchq_history WHERE queue = %(queue)s ORDER BY finished_at DESC LIMIT %(window)s) AS w;

-- name: dashboard_search_id
-- Job %(id)s by its primary key, in the job table and in the history.
SELECT id, queue, task, CAST(status AS CHAR) AS status, priority, error_count, max_errors, locked_by,
       serializer, LENGTH(payload) AS payload_bytes, last_error, CAST(run_at AS CHAR) AS at_text, 0 AS history
FROM batchq_job WHERE id = %(id)s
UNION ALL
SELECT id, queue, task, CAST(outcome AS CHAR), NULL, attempts, NULL, worker, serializer, LENGTH(payload),
       error, CAST(finished_at AS CHAR), 1
FROM batchq_history WHERE id = %(id)s;

-- part: search_jobs_head
-- A search's columns of a job (dashboard_search_jobs and its queue's).
SELECT STRAIGHT_JOIN j.id, j.queue, j.task, CAST(j.status AS CHAR) AS status, j.priority, j.error_count, j.max_errors,
       j.locked_by, j.serializer, LENGTH(j.payload) AS payload_bytes, j.last_error,
       CAST(j.run_at AS CHAR) AS at_text, 0 AS history

-- part: search_jobs_tail
-- A search's filters of the window's jobs and their order.
JOIN batchq_job AS j ON j.id = w.id
WHERE (%(queue)s IS NULL OR j.queue = %(queue)s)
  AND (%(task)s IS NULL OR j.task = %(task)s)
  AND (%(text)s IS NULL OR (j.serializer = 'json' AND LOCATE(%(needle)s, SUBSTRING(j.payload, 1, %(payload_bytes)s)) > 0)
       OR LOCATE(%(needle)s, CAST(j.last_error AS BINARY)) > 0)
ORDER BY j.run_at DESC, j.id DESC
LIMIT %(limit)s;

-- part: search_history_head
-- A search's columns of a kept job (dashboard_search_history and its queue's).
SELECT STRAIGHT_JOIN h.id, h.queue, h.task, CAST(h.outcome AS CHAR) AS status, NULL AS priority, h.attempts AS error_count,
       NULL AS max_errors, h.worker AS locked_by, h.serializer, LENGTH(h.payload) AS payload_bytes,
       h.error AS last_error, CAST(h.finished_at AS CHAR) AS at_text, 1 AS history

-- part: search_history_tail
-- A search's filters of the history window's jobs and their order.
JOIN batchq_history AS h ON h.id = w.id
WHERE (%(queue)s IS NULL OR h.queue = %(queue)s)
  AND (%(task)s IS NULL OR h.task = %(task)s)
  AND (%(text)s IS NULL OR (h.serializer = 'json' AND LOCATE(%(needle)s, SUBSTRING(h.payload, 1, %(payload_bytes)s)) > 0)
       OR LOCATE(%(needle)s, CAST(h.error AS BINARY)) > 0)
ORDER BY h.finished_at DESC, h.id DESC
LIMIT %(limit)s;
