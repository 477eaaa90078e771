-- `batchq dashboard` on PostgreSQL: plain SELECTs in autocommit, ages on the server's clock.
-- A page of a queue's jobs in one state walks an index in the claim's own order (priority DESC,
-- run_at, id) from where the last page stopped (keyset paging, never OFFSET), so a page reads
-- about a page's rows however long the queue: batchq_job_claim for 'ready', batchq_job_parked
-- (queue, status, ...) for 'scheduled', 'blocked' and 'failed'. Both are partial, so the plan
-- must see the state's value: a custom plan does, and the server keeps making custom plans for
-- these statements (a generic one, blind to the state, would cost far more). 'processing' rows,
-- as many as the jobs running, are read through batchq_job_due's status prefix and sorted. A
-- page that ends inside a priority continues with dashboard_jobs_same_priority, then
-- dashboard_jobs_lower_priority. The task filter is checked on the rows the walk reads.
-- run_at_text is run_at as text: the next page's link carries it exactly (PostgreSQL's
-- 'infinity', written by hand, too).

-- name: dashboard_jobs_lower_priority
-- Up to %(limit)s jobs of a queue in one status at priorities below %(priority)s, in claim order.
SELECT id, task, status, priority, run_at::text AS run_at_text, error_count, max_errors, locked_by,
       serializer, octet_length(payload) AS payload_bytes,
       CASE WHEN isfinite(run_at) THEN EXTRACT(EPOCH FROM run_at - statement_timestamp())::float8 END
           AS due_in_seconds
FROM batchq_job
WHERE queue = %(queue)s AND status = %(status)s AND priority < %(priority)s::integer
  AND (%(task)s::text IS NULL OR task = %(task)s::text)
ORDER BY priority DESC, run_at, id
LIMIT %(limit)s;

-- name: dashboard_jobs_same_priority
-- Up to %(limit)s jobs of a queue in one status at priority %(priority)s after (run_at, id).
SELECT id, task, status, priority, run_at::text AS run_at_text, error_count, max_errors, locked_by,
       serializer, octet_length(payload) AS payload_bytes,
       CASE WHEN isfinite(run_at) THEN EXTRACT(EPOCH FROM run_at - statement_timestamp())::float8 END
           AS due_in_seconds
FROM batchq_job
WHERE queue = %(queue)s AND status = %(status)s AND priority = %(priority)s::integer
  AND run_at >= %(run_at)s::timestamptz AND (run_at > %(run_at)s::timestamptz OR id > %(id)s::bigint)
  AND (%(task)s::text IS NULL OR task = %(task)s::text)
ORDER BY run_at, id
LIMIT %(limit)s;

-- name: dashboard_job_payload
-- One job's stored payload and serializer, for display (never unpickled).
SELECT serializer, payload FROM batchq_job WHERE id = %(id)s;

-- name: dashboard_workers
-- The workers running jobs now (locked_by of the processing rows, through batchq_job_due's
-- status prefix): how many each runs and the age of its oldest claim, in seconds.
SELECT locked_by, COUNT(*) AS jobs,
       EXTRACT(EPOCH FROM statement_timestamp()
               - MIN(processing_at) FILTER (WHERE isfinite(processing_at)))::float8 AS oldest_seconds
FROM batchq_job
WHERE status = 'processing'
GROUP BY locked_by
ORDER BY locked_by;

-- Search (batchq.dashboard.search): a task or text search reads a window of the newest
-- %(window)s rows of one status through batchq_job_due (status, run_at) walked backward, and
-- filters only those: a search of a table of millions reads %(window)s index entries and rows.
-- The filters stay outside the window's subquery: PostgreSQL never pushes a condition below a
-- LIMIT, where a join of the window's ids back to batchq_job let it plan a parallel seq scan of
-- every row of the task searched (a hash join: 126 ms on 1,000,000 rows, where this reads 10,000).
-- Text is a case-sensitive substring compared as bytes (position in the bytea payload: no
-- wildcard, no decoding), in a JSON payload's first %(payload_bytes)s bytes or
-- in the last error; a pickled or other binary payload is not searched (only text is).

-- name: dashboard_search_jobs
-- The newest matches among the newest %(window)s jobs of one status.
{{search_jobs_head}}
      FROM batchq_job WHERE status = %(status)s::text
      ORDER BY run_at DESC LIMIT %(window)s) AS w
{{search_jobs_tail}}

-- name: dashboard_search_jobs_window
-- How many rows the window holds, up to %(window)s (one more than searched: older ones exist).
SELECT COUNT(*) AS n
FROM (SELECT id FROM batchq_job WHERE status = %(status)s::text ORDER BY run_at DESC LIMIT %(window)s) AS w;

-- name: dashboard_search_queue_jobs
-- The same in one queue: its window is batchq_job_claim ('ready') or batchq_job_parked walked
-- backward (the last rows in claim order: the lowest priority first, then the latest due), so a
-- small queue beside a large one is searched whole ('processing': batchq_job_due, as the pages).
{{search_jobs_head}}
      FROM batchq_job WHERE queue = %(queue)s::text AND status = %(status)s::text
      ORDER BY priority, run_at DESC, id DESC LIMIT %(window)s) AS w
{{search_jobs_tail}}

-- name: dashboard_search_queue_jobs_window
-- How many rows the queue's window holds, up to the window.
SELECT COUNT(*) AS n
FROM (SELECT id FROM batchq_job WHERE queue = %(queue)s::text AND status = %(status)s::text
      ORDER BY priority, run_at DESC, id DESC LIMIT %(window)s) AS w;

-- name: dashboard_search_history
-- The newest matches among the newest %(window)s finished jobs kept (batchq_history_finished).
{{search_history_head}}
      FROM batchq_history
      ORDER BY finished_at DESC LIMIT %(window)s) AS w
{{search_history_tail}}

-- name: dashboard_search_history_window
-- How many rows the history's window holds, up to %(window)s.
SELECT COUNT(*) AS n FROM (SELECT id FROM batchq_history ORDER BY finished_at DESC LIMIT %(window)s) AS w;

-- name: dashboard_search_queue_history
-- The same in one queue's history (batchq_history_queue (queue, finished_at)).
{{search_history_head}}
      FROM batchq_history WHERE queue = %(queue)s::text
      ORDER BY finished_at DESC LIMIT %(window)s) AS w
{{search_history_tail}}

-- name: dashboard_search_queue_history_window
-- How many rows the queue's history window holds, up to the window.
SELECT COUNT(*) AS n FROM (SELECT id FROM batchq_history WHERE queue = %(queue)s::text ORDER BY finished_at DESC LIMIT %(window)s) AS w;

-- name: dashboard_search_id
-- Job %(id)s by its primary key, in the job table and in the history.
SELECT id, queue, task, status, priority, error_count, max_errors, locked_by, serializer,
       octet_length(payload) AS payload_bytes, last_error, run_at::text AS at_text, 0 AS history
FROM batchq_job WHERE id = %(id)s::bigint
UNION ALL
SELECT id, queue, task, outcome, NULL, attempts, NULL, worker, serializer, octet_length(payload),
       error, finished_at::text, 1
FROM batchq_history WHERE id = %(id)s::bigint;

-- part: search_jobs_head
-- A search's columns of a job (dashboard_search_jobs and its queue's).
SELECT id, queue, task, status, priority, error_count, max_errors, locked_by, serializer,
       payload_bytes, last_error, at_text, 0 AS history
FROM (SELECT id, queue, task, status, priority, error_count, max_errors, locked_by, serializer,
             octet_length(payload) AS payload_bytes, substring(payload FROM 1 FOR %(payload_bytes)s::integer) AS head,
             last_error, run_at, run_at::text AS at_text

-- part: search_jobs_tail
-- A search's filters of the window's jobs and their order.
WHERE (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(task)s::text IS NULL OR task = %(task)s::text)
  AND (%(text)s::text IS NULL OR (serializer = 'json' AND position(%(needle)s::bytea IN head) > 0) OR strpos(last_error, %(text)s::text) > 0)
ORDER BY run_at DESC, id DESC
LIMIT %(limit)s;

-- part: search_history_head
-- A search's columns of a kept job (dashboard_search_history and its queue's).
SELECT id, queue, task, status, priority, error_count, max_errors, locked_by, serializer,
       payload_bytes, last_error, at_text, 1 AS history
FROM (SELECT id, queue, task, outcome AS status, NULL::integer AS priority, attempts AS error_count,
             NULL::integer AS max_errors, worker AS locked_by, serializer,
             octet_length(payload) AS payload_bytes, substring(payload FROM 1 FOR %(payload_bytes)s::integer) AS head,
             error AS last_error, finished_at, finished_at::text AS at_text

-- part: search_history_tail
-- A search's filters of the history window's jobs and their order.
WHERE (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(task)s::text IS NULL OR task = %(task)s::text)
  AND (%(text)s::text IS NULL OR (serializer = 'json' AND position(%(needle)s::bytea IN head) > 0) OR strpos(last_error, %(text)s::text) > 0)
ORDER BY finished_at DESC, id DESC
LIMIT %(limit)s;
