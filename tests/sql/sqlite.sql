-- Statements the tests run on SQLite, by name (sqlite3 named paramstyle). The same names exist
-- in mysql.sql and postgresql.sql, apart from the extras tests/unit/test_query_names.py declares.

-- name: ledger_create
-- The ledger jobs:record writes to: one row per run of a job, to count losses and duplicates.
CREATE TABLE IF NOT EXISTS test_ledger (n INTEGER NOT NULL, pid INTEGER NOT NULL);

-- name: ledger_insert
-- A job's effect (or an application's earlier write), recorded in the ledger.
INSERT INTO test_ledger (n, pid) VALUES (:n, :pid);

-- name: job_insert
-- A job row written with plain SQL, due an hour ago (and claimed then, if claimed_an_hour_ago).
INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, error_count, max_errors,
                        locked_by, claim_token, processing_at, run_at, created_at)
VALUES (:queue, :task, :payload, :serializer, :priority, :status, :error_count, :max_errors,
        :locked_by, :claim_token,
        CASE WHEN :claimed_an_hour_ago THEN strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 hour') END,
        strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 hour'), strftime('%Y-%m-%d %H:%M:%f', 'now'));

-- name: job_insert_due_now
-- A JSON job row written with plain SQL, due now.
INSERT INTO batchq_job (queue, task, payload, serializer, priority, run_at, max_errors, created_at)
VALUES ('default', :task, :payload, 'json', 0, strftime('%Y-%m-%d %H:%M:%f', 'now'), :max_errors,
        strftime('%Y-%m-%d %H:%M:%f', 'now'));

-- name: job_set_run_at_far_past
-- The earliest due time the column holds (SQLite: the empty string sorts first).
UPDATE batchq_job SET run_at = '' WHERE id = :id;

-- name: job_set_run_at_far_future
-- The latest due time the column holds (SQLite: a string after every real date).
UPDATE batchq_job SET run_at = '9999-99-99' WHERE id = :id;

-- name: job_seconds_until_due
-- Seconds from the database's now to a job's run_at.
SELECT (julianday(run_at) - julianday('now')) * 86400.0 FROM batchq_job WHERE id = :id;

-- name: jobs_make_due
-- Every job due now.
UPDATE batchq_job SET run_at = strftime('%Y-%m-%d %H:%M:%f', 'now');

-- name: jobs_set_payload
-- Overwrite every job's payload (a forged or corrupt one).
UPDATE batchq_job SET payload = :payload;

-- name: jobs_set_payload_before
-- Overwrite the payload of the jobs before a given id.
UPDATE batchq_job SET payload = :payload WHERE id < :id;

-- name: jobs_set_task
-- Point every job at another task.
UPDATE batchq_job SET task = :task;

-- name: processing_owners
-- Workers whose names start with a prefix holding processing jobs, and how many each.
SELECT locked_by, COUNT(*) FROM batchq_job
WHERE status = 'processing' AND SUBSTR(locked_by, 1, LENGTH(:prefix)) = :prefix
GROUP BY locked_by;

-- name: job_row_lock
-- A write lock the worker's DELETE of a job must wait for (SQLite: the whole database).
BEGIN IMMEDIATE;

-- name: analyze_jobs
-- Fresh planner statistics for the job table.
ANALYZE;

-- name: analyze_messages
-- Fresh planner statistics for the message table.
ANALYZE;

-- name: job_insert_as_002_wrote_it
-- A job row as schema 002 held it (no 'scheduled' status), due in `due_in` seconds.
INSERT INTO batchq_job (queue, task, status, run_at, error_count, max_errors, locked_by,
                        processing_at, created_at)
VALUES ('default', :task, :status,
        strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+d seconds', :due_in)),
        :error_count, 10, :owner,
        CASE WHEN :status = 'processing' THEN strftime('%Y-%m-%d %H:%M:%f', 'now') END,
        strftime('%Y-%m-%d %H:%M:%f', 'now'));
