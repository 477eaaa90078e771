-- Every statement batchq runs on SQLite, by name (sqlite3 named paramstyle).
-- Times are UTC text from strftime('%Y-%m-%d %H:%M:%f', 'now'): they sort as they compare.

-- name: session_setup
-- Run first on every connection (bench/ floors too): WAL, so readers never block the writer.
PRAGMA journal_mode = WAL;

-- name: session_foreign_keys
-- Then foreign keys on (SQLite's extra session query).
PRAGMA foreign_keys = ON;

-- name: schema_version
-- The highest migration applied.
SELECT MAX(version) AS version FROM batchq_schema;

-- name: schema_version_set
-- Record a migration as applied (a concurrent init-db may have done it already).
INSERT OR IGNORE INTO batchq_schema (version, applied_at)
VALUES (:version, strftime('%Y-%m-%d %H:%M:%f', 'now'));

-- name: enqueue
-- One job; run_at is now plus the delay.
INSERT INTO batchq_job (queue, task, payload, serializer, priority, run_at, max_errors, created_at)
VALUES (:queue, :task, :payload, :serializer, :priority,
        strftime('%Y-%m-%d %H:%M:%f', 'now', :delay_modifier), :max_errors,
        strftime('%Y-%m-%d %H:%M:%f', 'now'));

-- name: next_priority
-- The highest priority level below a bound that has ready jobs: one index seek. Claims go
-- level by level so that run_at <= now is an index range and never walks future-dated rows.
SELECT priority FROM batchq_job
WHERE queue = :queue AND status = 'ready' AND priority < :below
ORDER BY priority DESC
LIMIT 1;

-- name: claim
-- Inside BEGIN IMMEDIATE: mark the next due job of a queue as ours; walks batchq_job_claim.
UPDATE batchq_job
SET status = 'processing', processing_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    locked_by = :worker, claim_token = :token
WHERE id = (
    SELECT id FROM batchq_job INDEXED BY batchq_job_claim
    WHERE queue = :queue AND status = 'ready' AND run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
      AND NOT EXISTS (SELECT 1 FROM batchq_queue WHERE name = :queue AND paused = 1)
      AND priority = :priority
    ORDER BY run_at, id
    LIMIT 1
)
-- The payload as bytes whatever its storage class: a TEXT payload that is not UTF-8
-- (written by hand) would fail the whole claim when decoded.
RETURNING id, queue, task, CAST(payload AS BLOB) AS payload, serializer, error_count, max_errors;


-- name: claim_batch
-- Batch mode, inside BEGIN IMMEDIATE: mark the next due jobs of a queue, up to a limit, as ours.
UPDATE batchq_job
SET status = 'processing', processing_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    locked_by = :worker, claim_token = :token
WHERE id IN (
    SELECT id FROM batchq_job INDEXED BY batchq_job_claim
    WHERE queue = :queue AND status = 'ready' AND run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
      AND NOT EXISTS (SELECT 1 FROM batchq_queue WHERE name = :queue AND paused = 1)
      AND priority = :priority
    ORDER BY run_at, id
    LIMIT :limit
)
-- The payload as bytes whatever its storage class: a TEXT payload that is not UTF-8
-- (written by hand) would fail the whole claim when decoded.
RETURNING id, queue, task, CAST(payload AS BLOB) AS payload, serializer, error_count, max_errors, priority, run_at;
-- name: job_delete
-- Success: the job is done. Zero rows when a sweep took the job back meanwhile.
DELETE FROM batchq_job WHERE id = :id AND claim_token = :token;


-- name: job_delete_batch
-- Batch mode: the successes of a batch in one statement; ids come as a JSON array.
DELETE FROM batchq_job WHERE claim_token = :token AND id IN (SELECT value FROM json_each(:ids_json));

-- name: release_batch
-- Batch mode: claimed jobs the worker will not run (it was told to stop) go back, uncounted.
UPDATE batchq_job
SET status = 'ready', processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE claim_token = :token AND id IN (SELECT value FROM json_each(:ids_json));
-- name: job_error
-- Failure: count it (up to 65535, the column's top); retry after the backoff, or fail for good
-- once out of tries.
UPDATE batchq_job
SET status = CASE WHEN error_count + 1 >= max_errors THEN 'failed' ELSE 'ready' END,
    error_count = CASE WHEN error_count < 65535 THEN error_count + 1 ELSE error_count END,
    last_error = :error,
    run_at = strftime('%Y-%m-%d %H:%M:%f', 'now', :delay_modifier),
    processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE id = :id AND claim_token = :token;

-- name: release_unknown_claims
-- After a reconnect, between jobs: a claim whose commit we never saw goes back, uncounted.
UPDATE batchq_job
SET status = 'ready', processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE status = 'processing' AND locked_by = :worker;

-- name: job_cancel
-- Remove a job nobody is running; a claimed job stays.
DELETE FROM batchq_job WHERE id = :id AND status IN ('ready', 'failed');

-- name: queue_stats
-- Per queue and status: counts, due counts and the oldest processing age, in seconds.
SELECT queue, status, COUNT(*) AS jobs,
       SUM(run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')) AS due,
       (julianday('now') - julianday(MIN(processing_at))) * 86400.0 AS oldest_seconds
FROM batchq_job
GROUP BY queue, status;

-- name: processing_jobs
-- Every claimed job with its owner and age.
SELECT id, queue, task, locked_by, claim_token, error_count, max_errors,
       (julianday('now') - julianday(processing_at)) * 86400.0 AS age_seconds
FROM batchq_job
WHERE status = 'processing'
ORDER BY processing_at, id;

-- name: requeue_abandoned
-- A dead worker's job goes back at once, counted as an error (a poison job ends failed).
-- The count stops at 65535, the column's top, and the token compares NULL-safely: a row
-- written by hand with either is put back like any other, never stuck.
UPDATE batchq_job
SET status = CASE WHEN error_count + 1 >= max_errors THEN 'failed' ELSE 'ready' END,
    error_count = CASE WHEN error_count < 65535 THEN error_count + 1 ELSE error_count END,
    last_error = :error,
    run_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE id = :id AND status = 'processing' AND claim_token IS :token;

-- name: unrunnable_jobs
-- Rows no worker will ever claim, for a human: a ready job whose priority (any type in SQLite)
-- is not a whole number below 32768, where claims start walking the levels down. Reads the
-- ready rows.
SELECT id, queue, task, status, priority
FROM batchq_job
WHERE status = 'ready' AND (typeof(priority) <> 'integer' OR priority > 32767)
ORDER BY id;

-- name: failed_jobs
-- Jobs out of tries, for a human.
SELECT id, queue, task, error_count, max_errors, last_error, created_at
FROM batchq_job
WHERE status = 'failed'
ORDER BY id;

-- name: requeue_failed
-- Give a failed job a fresh set of tries, due now.
UPDATE batchq_job
SET status = 'ready', error_count = 0, run_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id = :id AND status = 'failed';

-- name: delete_failed
-- Drop a failed job.
DELETE FROM batchq_job WHERE id = :id AND status = 'failed';

-- name: queue_set_paused
-- Pause or resume a queue.
INSERT INTO batchq_queue (name, paused) VALUES (:queue, :paused)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused;

-- name: paused_queues
-- Names of paused queues.
SELECT name FROM batchq_queue WHERE paused = 1 ORDER BY name;

-- name: purge_queue
-- Delete a queue's jobs that nobody is running.
DELETE FROM batchq_job WHERE queue = :queue AND status IN ('ready', 'failed');
