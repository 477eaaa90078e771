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
