-- Job results (Queue.result) on PostgreSQL: one job's state, and the sweep of expired records.

-- name: result_read
-- A job's row while it waits, runs or stays failed, and its kept record (unless expired), in one
-- statement, so one snapshot: a job finishing meanwhile is seen on one side or the other.
SELECT 'job' AS source, status AS state, created_at AS enqueued_at,
       CASE WHEN status = 'processing' THEN processing_at ELSE last_started_at END AS started_at,
       CASE WHEN status = 'failed' THEN last_error_at END AS finished_at,
       error_count AS attempts, CASE WHEN status = 'processing' THEN locked_by ELSE last_worker END AS worker,
       NULL::text AS result, NULL::text AS result_note, last_error AS error, error_class
FROM batchq_job
WHERE id = %(id)s
UNION ALL
SELECT 'history', outcome, enqueued_at, started_at, finished_at, attempts, worker, result, result_note,
       error, error_class
FROM batchq_history
WHERE id = %(id)s AND (expires_at IS NULL OR expires_at > statement_timestamp());

-- name: results_prune_expired
-- Up to %(batch)s records whose keep_result ran out (oldest first, along batchq_history_expires):
-- one bounded statement, its own short transaction, as history_prune.
DELETE FROM batchq_history
WHERE id = ANY(ARRAY(
    SELECT id FROM batchq_history
    WHERE expires_at <= statement_timestamp()
    ORDER BY expires_at
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
));

-- name: results_listen
LISTEN batchq_results;

-- name: results_unlisten
UNLISTEN batchq_results;
