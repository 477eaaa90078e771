-- The connection's own statements on PostgreSQL (batchq.backends): the session's setup, the
-- schema's version and the migration lock, a worker's liveness, and what else the backend runs
-- for itself; never a feature's (those are the stores', in the files beside this one).
-- Times are timestamptz compared with statement_timestamp(): the server's clock at the start of
-- the statement. now() would be the start of the transaction (stale in an application's long
-- transaction); clock_timestamp() is volatile, so the planner could not use it in an index scan.

-- name: session_setup
-- Run first on every connection (bench/ floors too): timestamps come back as UTC datetimes.
SET TIME ZONE 'UTC';

-- name: schema_version
-- The highest migration applied.
SELECT MAX(version) AS version FROM batchq_schema;

-- name: migration_lock
-- init-db: one migrating session per database at a time (advisory locks are per database; the
-- two-int form keeps clear of the workers' bigint liveness keys); waits for the one migrating.
SELECT 1 AS acquired FROM pg_advisory_lock(hashtext(%(name)s), 0);

-- name: migration_unlock
-- init-db is done: let the next one in.
SELECT pg_advisory_unlock(hashtext(%(name)s), 0) AS released;

-- name: schema_version_set
-- Record a migration as applied (a concurrent init-db may have done it already).
INSERT INTO batchq_schema (version, applied_at) VALUES (%(version)s, statement_timestamp())
ON CONFLICT (version) DO NOTHING;

-- name: liveness_lock
-- A session-level advisory lock held on the worker's connection for its whole life.
-- The backend pid is the worker's to end, should a dropped connection leave it behind.
SELECT pg_try_advisory_lock(%(key)s::bigint) AS acquired, pg_backend_pid() AS session;

-- name: liveness_lock_wait
-- Take the lock, waiting up to %(wait)s seconds for a backend we just ended to let go of it.
-- lock_timeout is set for this statement's own transaction only (an error 55P03 when it runs out).
SELECT true AS acquired, pg_backend_pid() AS session
FROM (SELECT set_config('lock_timeout', (%(wait)s * 1000)::int::text, true)) AS wait_limit,
     LATERAL (SELECT pg_advisory_lock(%(key)s::bigint)) AS taken;

-- name: liveness_handover_lock
-- Held while a worker takes its lock back from its ghost: the ghost frees the lock before the
-- worker can ask for it, and a sweep must not see the worker dead in between. The two-int form
-- of the same 64 bits (objsubid 2 in pg_locks), which liveness_held also counts.
SELECT pg_try_advisory_lock((%(key)s::bigint >> 32)::bit(32)::int, %(key)s::bigint::bit(32)::int)
       AS acquired;

-- name: liveness_handover_unlock
SELECT pg_advisory_unlock((%(key)s::bigint >> 32)::bit(32)::int, %(key)s::bigint::bit(32)::int)
       AS released;

-- name: liveness_holder
-- The backend holding the worker's lock, if any.
SELECT pid AS session FROM pg_locks
WHERE locktype = 'advisory' AND granted
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND classid = ((%(key)s::bigint >> 32) & 4294967295)::oid
  AND objid = (%(key)s::bigint & 4294967295)::oid
  AND objsubid = 1;

-- name: liveness_ghost
-- The backend holding the worker's lock if it has sat idle longer than a working worker's
-- heartbeat allows. Other roles' backends show their state only to pg_read_all_stats.
SELECT a.pid AS session,
       EXTRACT(EPOCH FROM statement_timestamp() - a.state_change)::float8 AS idle_seconds
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = ((%(key)s::bigint >> 32) & 4294967295)::oid
  AND l.objid = (%(key)s::bigint & 4294967295)::oid
  AND l.objsubid = 1
  AND a.state = 'idle'
  AND a.state_change < statement_timestamp() - make_interval(secs => %(idle_after)s::float8);

-- name: end_session
-- End a ghost backend holding a worker's lock (same role, pg_signal_backend, or superuser).
SELECT pg_terminate_backend(%(session)s::int) AS ended;

-- name: keep_session_open
-- The worker's session: no idle_session_timeout (a job may run for hours); before PostgreSQL 14
-- there is no such limit, and no such setting. No idle_in_transaction_session_timeout either: a
-- transactional task's job keeps its transaction open while the task runs (job_transaction).
SELECT set_config('idle_in_transaction_session_timeout', '0', false),
       (SELECT set_config('idle_session_timeout', '0', false)
        WHERE current_setting('server_version_num')::int >= 140000);

-- name: heartbeat
-- Keeps the worker's session from sitting idle while a job runs.
SELECT 1 AS alive;

-- name: liveness_held
-- Is the worker alive: its lock (or its handover lock) held by some session of this database, or
-- its lease not yet expired (lease liveness)? Reads pg_locks: never takes the lock. A bigint key
-- shows up as classid = high 32 bits, objid = low 32 bits, objsubid = 1; the two-int form of the
-- same bits as objsubid = 2.
SELECT EXISTS (
    SELECT 1 FROM pg_locks
    WHERE locktype = 'advisory' AND granted
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND classid = ((%(key)s::bigint >> 32) & 4294967295)::oid
      AND objid = (%(key)s::bigint & 4294967295)::oid
      AND objsubid IN (1, 2)
) OR EXISTS (
    SELECT 1 FROM batchq_lease WHERE owner = %(worker)s AND expire_at > clock_timestamp()
) AS held;

-- name: lease_renew
-- Take or extend the worker's lease for %(ttl)s seconds (lease liveness), on the server's clock.
INSERT INTO batchq_lease (owner, expire_at, renewed_at)
VALUES (%(worker)s, clock_timestamp() + %(ttl)s::float8 * interval '1 second', clock_timestamp())
ON CONFLICT (owner) DO UPDATE SET expire_at = excluded.expire_at, renewed_at = excluded.renewed_at;

-- name: lease_drop
-- The worker exits: its lease goes with it.
DELETE FROM batchq_lease WHERE owner = %(worker)s;

-- name: leases_prune
-- Leases of workers that died more than %(older_than)s seconds ago (gc-processing).
DELETE FROM batchq_lease WHERE expire_at < clock_timestamp() - %(older_than)s::float8 * interval '1 second';

-- name: listen
-- Subscribe the worker's connection to the wake-up notifications the triggers send.
LISTEN batchq_jobs;

-- name: jobs_vacuum_lock
-- Is the job table due a vacuum, and is it ours to run? Every claimed and deleted job leaves dead
-- rows, and their index entries sit in front of the claim's index scan until a VACUUM removes
-- them (autovacuum comes at most once a minute, or never where it is off). True when at least
-- %(dead_rows)s rows plus a fraction of the live ones are dead (the statistics lag by a second
-- or so), nobody vacuumed it in the last %(interval)s seconds, and this session took the vacuum
-- lock (two-int form: clear of the liveness and migration keys).
SELECT pg_try_advisory_lock(hashtext('batchq_job vacuum'), 1) AS locked
FROM pg_stat_user_tables
WHERE relid = 'batchq_job'::regclass
  AND n_dead_tup >= %(dead_rows)s + %(live_fraction)s::float8 * n_live_tup
  AND coalesce(greatest(last_vacuum, last_autovacuum), '-infinity')
      < statement_timestamp() - %(interval)s::float8 * interval '1 second';

-- name: jobs_vacuum
-- Remove the dead rows and their index entries; a table another session has locked (init-db
-- migrating) is skipped. The heap is not truncated: that takes an exclusive lock other workers'
-- claims would queue behind (and VACUUM retries it for up to 5 s), and a queue reuses the pages.
-- Outside any transaction (PostgreSQL refuses VACUUM inside one); a role that does not own the
-- table gets a warning and nothing is done.
VACUUM (SKIP_LOCKED, INDEX_CLEANUP TRUE, TRUNCATE FALSE) batchq_job;

-- name: jobs_vacuum_unlock
-- The vacuum is done: the next may be anyone's.
SELECT pg_advisory_unlock(hashtext('batchq_job vacuum'), 1) AS released;

-- name: session_backend
-- The server session's process id: another than the one libpq was given means a pooler between.
SELECT pg_backend_pid() AS session;
