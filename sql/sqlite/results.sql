-- Job results (Queue.result) on SQLite: one job's state, and the sweep of expired records.

-- name: result_read
-- A job's row while it waits, runs or stays failed, and its kept record (unless expired), in one
-- statement, so one snapshot: a job finishing meanwhile is seen on one side or the other.
SELECT 'job' AS source, status AS state, created_at AS enqueued_at,
       CASE WHEN status = 'processing' THEN processing_at ELSE last_started_at END AS started_at,
       CASE WHEN status = 'failed' THEN last_error_at END AS finished_at,
       error_count AS attempts, CASE WHEN status = 'processing' THEN locked_by ELSE last_worker END AS worker,
       NULL AS result, NULL AS result_note, last_error AS error, error_class
FROM batchq_job
WHERE id = :id
UNION ALL
SELECT 'history', outcome, enqueued_at, started_at, finished_at, attempts, worker, result, result_note,
       error, error_class
FROM batchq_history
WHERE id = :id AND (expires_at IS NULL OR expires_at > strftime('%Y-%m-%d %H:%M:%f', 'now'));

-- name: results_prune_expired
-- Up to :batch records whose keep_result ran out (oldest first, along batchq_history_expires):
-- one bounded statement, its own short write transaction, as history_prune.
DELETE FROM batchq_history
WHERE id IN (
    SELECT id FROM batchq_history
    WHERE expires_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
    ORDER BY expires_at
    LIMIT :batch
);

-- name: job_keep_cancelled
-- Queue.cancel, in its transaction before job_cancel: a waiting job that keeps its result (its
-- own keep_result, or its queue's keep_for) is copied into batchq_history as cancelled.
INSERT OR REPLACE INTO batchq_history (id, queue, task, payload, serializer, outcome, attempts, worker,
                                       enqueued_at, started_at, finished_at, error, error_class, expires_at)
SELECT j.id, j.queue, j.task, j.payload, j.serializer, 'cancelled', j.error_count, j.last_worker, j.created_at,
       j.last_started_at, strftime('%Y-%m-%d %H:%M:%f', 'now'), j.last_error, j.error_class,
       CASE WHEN j.keep_result IS NOT NULL
            THEN strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', j.keep_result)) END
FROM batchq_job j
WHERE j.id = :id AND j.status IN ('ready', 'scheduled', 'blocked')
  AND (j.keep_result IS NOT NULL
       OR EXISTS (SELECT 1 FROM batchq_queue q WHERE q.name = j.queue AND q.keep_for IS NOT NULL));
