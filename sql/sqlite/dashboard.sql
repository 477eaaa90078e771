-- `batchq dashboard` on SQLite: plain SELECTs in autocommit, ages on the database's clock ('now').
-- A page of a queue's jobs in one state walks batchq_job_claim (queue, status, priority DESC,
-- run_at, id) from where the last page stopped (keyset paging, never OFFSET): the claim's own
-- order, and a page reads about a page's rows however long the queue. A page that ends inside a
-- priority continues with dashboard_jobs_same_priority, then dashboard_jobs_lower_priority. The
-- task filter is checked on the rows the walk reads. run_at_text is run_at as text: the next page's
-- link carries it exactly (PostgreSQL's 'infinity', written by hand, too).

-- name: dashboard_jobs_lower_priority
-- Up to :limit jobs of a queue in one status at priorities below :priority, in claim order.
SELECT id, task, status, priority, run_at AS run_at_text, error_count, max_errors, locked_by,
       serializer, length(CAST(payload AS BLOB)) AS payload_bytes,
       (julianday(run_at) - julianday('now')) * 86400.0 AS due_in_seconds
FROM batchq_job
WHERE queue = :queue AND status = :status AND priority < :priority
  AND (:task IS NULL OR task = :task)
ORDER BY priority DESC, run_at, id
LIMIT :limit;

-- name: dashboard_jobs_same_priority
-- Up to :limit jobs of a queue in one status at priority :priority after (run_at, id).
SELECT id, task, status, priority, run_at AS run_at_text, error_count, max_errors, locked_by,
       serializer, length(CAST(payload AS BLOB)) AS payload_bytes,
       (julianday(run_at) - julianday('now')) * 86400.0 AS due_in_seconds
FROM batchq_job
WHERE queue = :queue AND status = :status AND priority = :priority
  AND run_at >= :run_at AND (run_at > :run_at OR id > :id)
  AND (:task IS NULL OR task = :task)
ORDER BY run_at, id
LIMIT :limit;

-- name: dashboard_job_payload
-- One job's stored payload and serializer, for display (never unpickled).
SELECT serializer, payload FROM batchq_job WHERE id = :id;

-- name: dashboard_workers
-- The workers running jobs now (locked_by of the processing rows, through batchq_job_due's
-- status prefix): how many each runs and the age of its oldest claim, in seconds.
SELECT locked_by, COUNT(*) AS jobs,
       (julianday('now') - julianday(MIN(processing_at))) * 86400.0 AS oldest_seconds
FROM batchq_job
WHERE status = 'processing'
GROUP BY locked_by
ORDER BY locked_by;

-- Search (batchq.dashboard.search): a task or text search reads a window of the newest :window
-- rows of one status through batchq_job_due (status, run_at) walked backward, and filters only
-- those: a search of a table of millions reads :window index entries and rows. CROSS JOIN
-- fixes SQLite's join order: the window first, its rows joined back by rowid. Text is a
-- case-sensitive substring compared as bytes (instr on BLOBs: no wildcard, no decoding), in the
-- first :payload_bytes bytes of a JSON payload or in the last error; a pickled or other binary
-- payload is not searched (only text is).

-- name: dashboard_search_jobs
-- The newest matches among the newest :window jobs of one status.
{{search_jobs_head}}
FROM (SELECT id FROM batchq_job WHERE status = :status ORDER BY run_at DESC LIMIT :window) AS w
{{search_jobs_tail}}

-- name: dashboard_search_jobs_window
-- How many rows the window holds, up to :window (one more than searched: older ones exist).
SELECT COUNT(*) AS n
FROM (SELECT id FROM batchq_job WHERE status = :status ORDER BY run_at DESC LIMIT :window) AS w;

-- name: dashboard_search_queue_jobs
-- The same in one queue: its window is batchq_job_claim walked backward (the last rows in claim
-- order: the lowest priority first, then the latest due), so a small queue beside a large one is
-- searched whole.
{{search_jobs_head}}
FROM (SELECT id FROM batchq_job WHERE queue = :queue AND status = :status
      ORDER BY priority, run_at DESC, id DESC LIMIT :window) AS w
{{search_jobs_tail}}

-- name: dashboard_search_queue_jobs_window
-- How many rows the queue's window holds, up to the window.
SELECT COUNT(*) AS n
FROM (SELECT id FROM batchq_job WHERE queue = :queue AND status = :status
      ORDER BY priority, run_at DESC, id DESC LIMIT :window) AS w;

-- name: dashboard_search_history
-- The newest matches among the newest :window finished jobs kept (batchq_history_finished).
{{search_history_head}}
FROM (SELECT id FROM batchq_history ORDER BY finished_at DESC LIMIT :window) AS w
{{search_history_tail}}

-- name: dashboard_search_history_window
-- How many rows the history's window holds, up to :window.
SELECT COUNT(*) AS n FROM (SELECT id FROM batchq_history ORDER BY finished_at DESC LIMIT :window) AS w;

-- name: dashboard_search_queue_history
-- The same in one queue's history (batchq_history_queue (queue, finished_at)).
{{search_history_head}}
FROM (SELECT id FROM batchq_history WHERE queue = :queue ORDER BY finished_at DESC LIMIT :window) AS w
{{search_history_tail}}

-- name: dashboard_search_queue_history_window
-- How many rows the queue's history window holds, up to the window.
SELECT COUNT(*) AS n FROM (SELECT id FROM batchq_history WHERE queue = :queue ORDER BY finished_at DESC LIMIT :window) AS w;

-- name: dashboard_search_id
-- Job :id by its primary key, in the job table and in the history.
SELECT id, queue, task, status, priority, error_count, max_errors, locked_by, serializer,
       length(CAST(payload AS BLOB)) AS payload_bytes, last_error, run_at AS at_text, 0 AS history
FROM batchq_job WHERE id = :id
UNION ALL
SELECT id, queue, task, outcome, NULL, attempts, NULL, worker, serializer, length(CAST(payload AS BLOB)),
       error, finished_at, 1
FROM batchq_history WHERE id = :id;

-- part: search_jobs_head
-- A search's columns of a job (dashboard_search_jobs and its queue's).
SELECT j.id, j.queue, j.task, j.status, j.priority, j.error_count, j.max_errors,
       j.locked_by, j.serializer, length(CAST(j.payload AS BLOB)) AS payload_bytes, j.last_error,
       j.run_at AS at_text, 0 AS history

-- part: search_jobs_tail
-- A search's filters of the window's jobs and their order.
CROSS JOIN batchq_job AS j
WHERE j.id = w.id AND (:queue IS NULL OR j.queue = :queue)
  AND (:task IS NULL OR j.task = :task)
  AND (:text IS NULL OR (j.serializer = 'json' AND instr(substr(CAST(j.payload AS BLOB), 1, :payload_bytes), :needle) > 0)
       OR instr(CAST(j.last_error AS BLOB), :needle) > 0)
ORDER BY j.run_at DESC, j.id DESC
LIMIT :limit;

-- part: search_history_head
-- A search's columns of a kept job (dashboard_search_history and its queue's).
SELECT h.id, h.queue, h.task, h.outcome AS status, NULL AS priority, h.attempts AS error_count,
       NULL AS max_errors, h.worker AS locked_by, h.serializer,
       length(CAST(h.payload AS BLOB)) AS payload_bytes, h.error AS last_error, h.finished_at AS at_text,
       1 AS history

-- part: search_history_tail
-- A search's filters of the history window's jobs and their order.
CROSS JOIN batchq_history AS h
WHERE h.id = w.id AND (:queue IS NULL OR h.queue = :queue)
  AND (:task IS NULL OR h.task = :task)
  AND (:text IS NULL OR (h.serializer = 'json' AND instr(substr(CAST(h.payload AS BLOB), 1, :payload_bytes), :needle) > 0)
       OR instr(CAST(h.error AS BLOB), :needle) > 0)
ORDER BY h.finished_at DESC, h.id DESC
LIMIT :limit;
