-- Statements the tests run on SQLite, by name (sqlite3 named paramstyle). The same names exist
-- in mysql.sql and postgresql.sql, apart from the extras tests/unit/test_query_names.py declares.

-- name: ledger_create
-- The ledger jobs:record writes to: one row per run of a job, to count losses and duplicates.
CREATE TABLE IF NOT EXISTS test_ledger (n INTEGER NOT NULL, pid INTEGER NOT NULL);

-- name: ledger_insert
-- A job's effect (or an application's earlier write), recorded in the ledger.
INSERT INTO test_ledger (n, pid) VALUES (:n, :pid);

-- name: ledger_count
-- Ledger rows with n in [low, high]: the jobs of one concurrency key running right now.
SELECT COUNT(*) FROM test_ledger WHERE n BETWEEN :low AND :high;

-- name: ledger_delete
-- A job's ledger row, gone when it ends.
DELETE FROM test_ledger WHERE n = :n;

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

-- name: job_expired
-- Job :id past its expiry (a second ago).
UPDATE batchq_job SET expires_at = strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 seconds') WHERE id = :id;

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

-- name: lock_row_insert
-- A lock row written with plain SQL, expiring at an early ('past') or a far ('future') time.
INSERT INTO batchq_lock (name, slot, lock_by, state, expire_at, token)
VALUES (:name, :slot, :lock_by, :state,
        CASE WHEN :when = 'past' THEN '0001-01-01 00:00:00.000' ELSE '9999-12-31 23:59:59.999' END,
        :token);

-- name: lock_row_insert_expire_text
-- A held lock row written with plain SQL whose expire_at is the text given.
INSERT INTO batchq_lock (name, slot, lock_by, state, expire_at, token)
VALUES (:name, 0, 'someone', 'locked', :expire_at, 0);

-- name: schedule_set_next_exec
-- Move a schedule's next slot to a given time (seconds since the epoch), as if ticks had stopped.
UPDATE batchq_schedule SET next_exec = strftime('%Y-%m-%d %H:%M:%f', :at, 'unixepoch') WHERE name = :name;

-- name: schedule_next_exec
-- A schedule's next slot, in seconds since the epoch.
SELECT CAST(strftime('%s', next_exec) AS INTEGER) FROM batchq_schedule WHERE name = :name;

-- name: jobs_refuse_drop
-- Remove the trigger jobs_refuse_create made.
DROP TRIGGER IF EXISTS test_jobs_refuse;

-- name: jobs_refuse_create
-- Make every INSERT of a job into queue 'refused' fail, inside whatever transaction runs it.
CREATE TRIGGER test_jobs_refuse BEFORE INSERT ON batchq_job WHEN NEW.queue = 'refused'
BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END;

-- name: job_set_partition
-- Place a job in a partition by hand, as a producer with a stale partition count would.
UPDATE batchq_job SET claim_partition = :partition WHERE id = :id;

-- name: jobs_per_partition
-- How many jobs each partition holds.
SELECT claim_partition, COUNT(*) FROM batchq_job GROUP BY claim_partition ORDER BY claim_partition;

-- name: partition_lease_by_hand
-- A lease written by plain SQL, as a worker that then died would have left it.
UPDATE batchq_partition
SET lock_by = :worker, leased_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    expire_at = strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+d seconds', :seconds))
WHERE partition_no = :partition;


-- name: job_insert_unique
-- A job row with a unique key, written with plain SQL (any type: SQLite keeps what it is given),
-- due now.
INSERT INTO batchq_job (queue, task, status, run_at, max_errors, created_at, unique_key)
VALUES ('default', 'jobs:noop', :status, strftime('%Y-%m-%d %H:%M:%f', 'now'), 10,
        strftime('%Y-%m-%d %H:%M:%f', 'now'), :unique_key);

-- name: job_unique_keys
-- Every job's id, status and unique key, in id order.
SELECT id, status, unique_key FROM batchq_job ORDER BY id;

-- name: worker_insert_by_hand
-- A registry row written by plain SQL, as a worker that died without removing it left it.
INSERT INTO batchq_worker (name, host, pid, kind, serves, started_at, last_seen)
VALUES (:name, :host, :pid, 'run', :serves,
        strftime('%Y-%m-%d %H:%M:%f', 'now', printf('-%d seconds', :seen_ago)),
        strftime('%Y-%m-%d %H:%M:%f', 'now', printf('-%d seconds', :seen_ago)));

-- name: history_age
-- Make a history record look finished :seconds ago.
UPDATE batchq_history
SET finished_at = strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -:seconds))
WHERE id = :id;

-- name: history_count
-- Every history record's id, and how many records each id has.
SELECT id, COUNT(*) FROM batchq_history GROUP BY id ORDER BY id;

-- name: job_set_task_version
-- A job's stored task version, as a row written by hand (or before schema 013: NULL) holds it.
UPDATE batchq_job SET task_version = :version WHERE id = :id;

-- name: job_make_old
-- A job enqueued an hour ago.
UPDATE batchq_job SET created_at = strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 hour') WHERE id = :id;

-- name: job_version_columns
-- What schema 013 added to a job row.
SELECT task_version, backoff, version_wait FROM batchq_job WHERE id = :id;

-- name: mq_archive_backdate
-- Make a queue's archived messages `days` older, for prune.
UPDATE batchq_message_archive SET archived_at = strftime('%Y-%m-%d %H:%M:%f', archived_at, printf('-%d days', :days))
WHERE queue = :queue;

-- name: message_insert_by_hand
-- A message written around batchq (no type check), visible now.
INSERT INTO batchq_message (queue, vt, read_ct, enqueued_at, message)
VALUES (:queue, strftime('%Y-%m-%d %H:%M:%f', 'now'), 0, strftime('%Y-%m-%d %H:%M:%f', 'now'), :message);

-- name: message_texts
-- Every message of a queue, as JSON text, by id.
SELECT id, message FROM batchq_message WHERE queue = :queue ORDER BY id;

-- name: archive_reasons
-- Every archived message of a queue with the reason batchq archived it, by id.
SELECT id, reason FROM batchq_message_archive WHERE queue = :queue ORDER BY id;

-- name: schedule_set_next_exec_by_hand
-- A schedule's next slot as a person would write it: whole seconds, no fraction.
UPDATE batchq_schedule SET next_exec = strftime('%Y-%m-%d %H:%M:%S', :at, 'unixepoch') WHERE name = :name;

-- name: stamp_create
-- The table expiry_jobs:stamp writes: a job's number and when its task began, on the database's clock.
CREATE TABLE IF NOT EXISTS test_stamp (n INTEGER NOT NULL, started TEXT NOT NULL);

-- name: stamp_insert
-- A task's own start, on the database's clock (UTC text, as batchq's times).
INSERT INTO test_stamp (n, started) VALUES (:n, strftime('%Y-%m-%d %H:%M:%f', 'now'));

-- name: server_now
-- The database's clock, as claims read it.
SELECT strftime('%Y-%m-%d %H:%M:%f', 'now') AS now;

-- name: job_control
-- What a task's control (batchq.jobs.control) leaves on its job's row.
SELECT status, error_count, snoozes, last_error, error_class, snoozed_at IS NOT NULL AS snoozed
FROM batchq_job WHERE id = :id;

-- name: flow_ledger_create
-- The ledger flow_jobs:record_start writes to (tests/acceptance/test_flow_control.py).
CREATE TABLE IF NOT EXISTS test_flow_ledger (job INTEGER NOT NULL, started REAL NOT NULL,
                                             recorded REAL NOT NULL, pid INTEGER NOT NULL);

-- name: flow_ledger_clear
-- An empty flow ledger.
DELETE FROM test_flow_ledger;

-- name: flow_ledger_insert
-- A job's start: its row's processing_at and the server's now, as Unix seconds.
INSERT INTO test_flow_ledger (job, started, recorded, pid)
SELECT id, (julianday(processing_at) - 2440587.5) * 86400.0, (julianday('now') - 2440587.5) * 86400.0, :pid
FROM batchq_job WHERE id = :id;

-- name: flow_ledger_read
-- The recorded starts, earliest first.
SELECT job, started, recorded, pid FROM test_flow_ledger ORDER BY started;
