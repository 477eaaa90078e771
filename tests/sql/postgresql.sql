-- Statements the tests run on PostgreSQL, by name (psycopg pyformat paramstyle). The same names
-- exist in mysql.sql and sqlite.sql, apart from the extras tests/unit/test_query_names.py declares.

-- name: ledger_create
-- The ledger jobs:record writes to: one row per run of a job, to count losses and duplicates.
CREATE TABLE IF NOT EXISTS test_ledger (n BIGINT NOT NULL, pid INT NOT NULL);

-- name: ledger_insert
-- A job's effect (or an application's earlier write), recorded in the ledger.
INSERT INTO test_ledger (n, pid) VALUES (%(n)s, %(pid)s);

-- name: ledger_count
-- Ledger rows with n in [low, high]: the jobs of one concurrency key running right now.
SELECT COUNT(*) FROM test_ledger WHERE n BETWEEN %(low)s AND %(high)s;

-- name: ledger_delete
-- A job's ledger row, gone when it ends.
DELETE FROM test_ledger WHERE n = %(n)s;

-- name: job_insert
-- A job row written with plain SQL, due an hour ago (and claimed then, if claimed_an_hour_ago).
INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, error_count, max_errors,
                        locked_by, claim_token, processing_at, run_at, created_at)
VALUES (%(queue)s, %(task)s, %(payload)s, %(serializer)s, %(priority)s, %(status)s, %(error_count)s,
        %(max_errors)s, %(locked_by)s, %(claim_token)s,
        CASE WHEN %(claimed_an_hour_ago)s THEN statement_timestamp() - interval '1 hour' END,
        statement_timestamp() - interval '1 hour', statement_timestamp());

-- name: job_insert_due_now
-- A JSON job row written with plain SQL, due now.
INSERT INTO batchq_job (queue, task, payload, serializer, priority, run_at, max_errors, created_at)
VALUES ('default', %(task)s, %(payload)s, 'json', 0, statement_timestamp(), %(max_errors)s,
        statement_timestamp());

-- name: job_set_run_at_far_past
-- The earliest due time the column holds.
UPDATE batchq_job SET run_at = '-infinity' WHERE id = %(id)s;

-- name: job_set_run_at_far_future
-- The latest due time the column holds.
UPDATE batchq_job SET run_at = 'infinity' WHERE id = %(id)s;

-- name: job_seconds_until_due
-- Seconds from the database's now to a job's run_at.
SELECT EXTRACT(EPOCH FROM run_at - now()) FROM batchq_job WHERE id = %(id)s;

-- name: job_expired
-- Job %(id)s past its expiry (a second ago).
UPDATE batchq_job SET expires_at = now() - interval '1 second' WHERE id = %(id)s;

-- name: jobs_make_due
-- Every job due now.
UPDATE batchq_job SET run_at = now();

-- name: jobs_set_payload
-- Overwrite every job's payload (a forged or corrupt one).
UPDATE batchq_job SET payload = %(payload)s;

-- name: jobs_set_payload_before
-- Overwrite the payload of the jobs before a given id.
UPDATE batchq_job SET payload = %(payload)s WHERE id < %(id)s;

-- name: jobs_set_task
-- Point every job at another task.
UPDATE batchq_job SET task = %(task)s;

-- name: processing_owners
-- Workers whose names start with a prefix holding processing jobs, and how many each.
SELECT locked_by, COUNT(*) FROM batchq_job
WHERE status = 'processing' AND SUBSTR(locked_by, 1, LENGTH(%(prefix)s)) = %(prefix)s
GROUP BY locked_by;

-- name: job_row_lock
-- A write lock the worker's DELETE of a job must wait for.
SELECT id FROM batchq_job WHERE id = %(id)s FOR UPDATE;

-- name: analyze_jobs
-- Fresh planner statistics for the job table.
ANALYZE;

-- name: analyze_messages
-- Fresh planner statistics for the message table.
ANALYZE;

-- name: lock_wait_short
-- This session gives up a lock wait after 300 ms.
SET lock_timeout = '300ms';

-- name: sessions_running
-- Other sessions of this test database (never another suite's) running a statement LIKE a pattern.
SELECT pid FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND state = 'active' AND datname = current_database()
  AND query LIKE %(statement)s;

-- name: sessions_idle
-- This test database's other sessions that are idle (ghosts a proxy left behind).
SELECT pid FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'idle';

-- name: sessions_waiting_for_table_lock
-- Other sessions of this test database waiting for a lock (jobs_table_lock's), whatever
-- statement they wait in.
SELECT pid FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND datname = current_database() AND wait_event_type = 'Lock';

-- name: session_end
-- End a session, as a crash of its host would.
SELECT pg_terminate_backend(%(session)s);

-- name: jobs_table_lock
-- Block every statement on the job table until jobs_table_unlock (this transaction's end).
LOCK TABLE batchq_job IN ACCESS EXCLUSIVE MODE;

-- name: job_insert_due
-- A due jobs:record job, written by the session holding jobs_table_lock.
INSERT INTO batchq_job (queue, task, payload, serializer, status, run_at, created_at)
VALUES ('default', 'jobs:record', %(payload)s, 'json', 'ready', statement_timestamp(), statement_timestamp());

-- name: jobs_table_unlock
-- Let statements on the job table through again.
COMMIT;

-- name: server_idle_timeout_short
-- The server ends sessions idle for a second (server-wide: a private server); reload to apply.
ALTER SYSTEM SET idle_session_timeout = '1s';

-- name: server_reload_conf
-- Apply the settings ALTER SYSTEM wrote.
SELECT pg_reload_conf();

-- name: job_insert_as_002_wrote_it
-- A job row as schema 002 held it (no 'scheduled' status), due in `due_in` seconds.
INSERT INTO batchq_job (queue, task, status, run_at, error_count, max_errors, locked_by,
                        processing_at, created_at)
VALUES ('default', %(task)s, %(status)s::varchar, statement_timestamp() + %(due_in)s * interval '1 second',
        %(error_count)s, 10, %(owner)s,
        CASE WHEN %(status)s::varchar = 'processing' THEN statement_timestamp() END, statement_timestamp());

-- name: lock_row_insert
-- A lock row written with plain SQL, expiring at an early ('past') or a far ('future') time.
INSERT INTO batchq_lock (name, slot, lock_by, state, expire_at, token)
VALUES (%(name)s, %(slot)s, %(lock_by)s, %(state)s,
        CASE WHEN %(when)s::text = 'past' THEN timestamptz '0001-01-01 00:00:00+00'
             ELSE timestamptz '9999-12-31 23:59:59.999999+00' END,
        %(token)s);

-- name: lock_row_insert_expire_text
-- A held lock row written with plain SQL whose expire_at is the text given.
INSERT INTO batchq_lock (name, slot, lock_by, state, expire_at, token)
VALUES (%(name)s, 0, 'someone', 'locked', %(expire_at)s::text::timestamptz, 0);

-- name: stats_flush
-- Send this session's pending table statistics now (they go at most once a second otherwise).
SELECT pg_stat_force_next_flush();

-- name: job_table_vacuums
-- The job table's dead rows and how often it was vacuumed by hand (a worker's VACUUM counts so).
SELECT n_dead_tup, vacuum_count FROM pg_stat_user_tables WHERE relid = 'batchq_job'::regclass;

-- name: vacuum_lock_take
-- The lock a worker takes to vacuum the job table, taken by the test's own session.
SELECT pg_try_advisory_lock(hashtext('batchq_job vacuum'), 1);

-- name: schedule_set_next_exec
-- Move a schedule's next slot to a given time (seconds since the epoch), as if ticks had stopped.
UPDATE batchq_schedule SET next_exec = to_timestamp(%(at)s::float8) WHERE name = %(name)s;

-- name: schedule_next_exec
-- A schedule's next slot, in seconds since the epoch.
SELECT extract(epoch FROM next_exec)::bigint FROM batchq_schedule WHERE name = %(name)s;

-- name: jobs_refuse_drop
-- Remove the trigger jobs_refuse_create made.
DROP TRIGGER IF EXISTS test_jobs_refuse ON batchq_job;

-- name: jobs_refuse_function
-- The function of the trigger jobs_refuse_create makes.
CREATE OR REPLACE FUNCTION test_jobs_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.queue = 'refused' THEN RAISE EXCEPTION 'refused by a test trigger'; END IF;
    RETURN NEW;
END $$;

-- name: jobs_refuse_create
-- Make every INSERT of a job into queue 'refused' fail, inside whatever transaction runs it.
CREATE TRIGGER test_jobs_refuse BEFORE INSERT ON batchq_job FOR EACH ROW EXECUTE FUNCTION test_jobs_refuse();

-- name: job_set_partition
-- Place a job in a partition by hand, as a producer with a stale partition count would.
UPDATE batchq_job SET claim_partition = %(partition)s WHERE id = %(id)s;

-- name: jobs_per_partition
-- How many jobs each partition holds.
SELECT claim_partition, COUNT(*) FROM batchq_job GROUP BY claim_partition ORDER BY claim_partition;

-- name: partition_lease_by_hand
-- A lease written by plain SQL, as a worker that then died would have left it.
UPDATE batchq_partition
SET lock_by = %(worker)s, leased_at = now(), expire_at = now() + %(seconds)s * interval '1 second'
WHERE partition_no = %(partition)s;

-- name: job_insert_unique
-- A job row with a unique key, written with plain SQL, due now.
INSERT INTO batchq_job (queue, task, status, run_at, max_errors, created_at, unique_key)
VALUES ('default', 'jobs:noop', %(status)s::varchar, statement_timestamp(), 10, statement_timestamp(),
        %(unique_key)s::varchar);

-- name: job_unique_keys
-- Every job's id, status and unique key, in id order.
SELECT id, status, unique_key FROM batchq_job ORDER BY id;

-- name: worker_insert_by_hand
-- A registry row written by plain SQL, as a worker that died without removing it left it.
INSERT INTO batchq_worker (name, host, pid, kind, serves, started_at, last_seen)
VALUES (%(name)s, %(host)s, %(pid)s, 'run', %(serves)s, now() - %(seen_ago)s * interval '1 second',
        now() - %(seen_ago)s * interval '1 second');

-- name: history_age
-- Make a history record look finished %(seconds)s ago.
UPDATE batchq_history
SET finished_at = statement_timestamp() - %(seconds)s::float8 * interval '1 second'
WHERE id = %(id)s;

-- name: history_count
-- Every history record's id, and how many records each id has.
SELECT id, COUNT(*) FROM batchq_history GROUP BY id ORDER BY id;

-- name: job_set_task_version
-- A job's stored task version, as a row written by hand (or before schema 013: NULL) holds it.
UPDATE batchq_job SET task_version = %(version)s WHERE id = %(id)s;

-- name: job_make_old
-- A job enqueued an hour ago.
UPDATE batchq_job SET created_at = now() - interval '1 hour' WHERE id = %(id)s;

-- name: job_version_columns
-- What schema 013 added to a job row.
SELECT task_version, backoff, version_wait FROM batchq_job WHERE id = %(id)s;

-- name: mq_archive_backdate
-- Make a queue's archived messages `days` older, for prune.
UPDATE batchq_message_archive SET archived_at = archived_at - %(days)s * interval '1 day' WHERE queue = %(queue)s;

-- name: message_insert_by_hand
-- A message written around batchq (no type check), visible now.
INSERT INTO batchq_message (queue, vt, read_ct, enqueued_at, message)
VALUES (%(queue)s, clock_timestamp(), 0, clock_timestamp(), %(message)s::jsonb);

-- name: message_texts
-- Every message of a queue, as JSON text, by id.
SELECT id, message::text FROM batchq_message WHERE queue = %(queue)s ORDER BY id;

-- name: archive_reasons
-- Every archived message of a queue with the reason batchq archived it, by id.
SELECT id, reason FROM batchq_message_archive WHERE queue = %(queue)s ORDER BY id;

-- name: schedule_set_next_exec_by_hand
-- A schedule's next slot written by hand with a fraction of a second (no writer of batchq's does).
UPDATE batchq_schedule SET next_exec = to_timestamp(%(at)s::float8 + 0.25) WHERE name = %(name)s;

-- name: stamp_create
-- The table expiry_jobs:stamp writes: a job's number and when its task began, on the server's clock.
CREATE TABLE IF NOT EXISTS test_stamp (n BIGINT NOT NULL, started TIMESTAMPTZ NOT NULL);

-- name: stamp_insert
-- A task's own start, on the server's clock (clock_timestamp: the instant, not the transaction's).
INSERT INTO test_stamp (n, started) VALUES (%(n)s, clock_timestamp());

-- name: server_now
-- The server's clock, as claims read it.
SELECT statement_timestamp() AS now;

-- name: job_control
-- What a task's control (batchq.jobs.control) leaves on its job's row.
SELECT status, error_count, snoozes, last_error, error_class, snoozed_at IS NOT NULL AS snoozed
FROM batchq_job WHERE id = %(id)s;

-- name: flow_ledger_create
-- The ledger flow_jobs:record_start writes to (tests/acceptance/test_flow_control.py).
CREATE TABLE IF NOT EXISTS test_flow_ledger (job BIGINT NOT NULL, started DOUBLE PRECISION NOT NULL,
                                             recorded DOUBLE PRECISION NOT NULL, pid INTEGER NOT NULL);

-- name: flow_ledger_clear
-- An empty flow ledger.
DELETE FROM test_flow_ledger;

-- name: flow_ledger_insert
-- A job's start: its row's processing_at and the server's now, as Unix seconds.
INSERT INTO test_flow_ledger (job, started, recorded, pid)
SELECT id, EXTRACT(EPOCH FROM processing_at)::float8, EXTRACT(EPOCH FROM clock_timestamp())::float8, %(pid)s
FROM batchq_job WHERE id = %(id)s;

-- name: flow_ledger_read
-- The recorded starts, earliest first.
SELECT job, started, recorded, pid FROM test_flow_ledger ORDER BY started;

-- name: session_client_ports
-- The client TCP ports of the sessions in this database: a session whose client is gone lingers
-- until its statement in flight has ended.
SELECT client_port FROM pg_stat_activity WHERE client_port > 0 AND datname = current_database();
