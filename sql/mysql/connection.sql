-- The connection's own statements on MySQL/MariaDB (batchq.backends): the session's setup, the
-- schema's version and the migration lock, a worker's liveness, and what else the backend runs
-- for itself; never a feature's (those are the stores', in the files beside this one).
-- Times are UTC DATETIME(6) compared with UTC_TIMESTAMP(6): the server's clock, whatever
-- the session time zone (enqueue may run on the application's own connection).

-- name: schema_version
-- The highest migration applied.
SELECT MAX(version) AS version FROM batchq_schema;

-- name: migration_lock
-- init-db: one migrating session per database at a time; 1 when taken, 0 after 60 s of waiting.
SELECT GET_LOCK(%(name)s, 60) AS acquired;

-- name: migration_unlock
-- init-db is done: let the next one in.
SELECT RELEASE_LOCK(%(name)s) AS released;

-- name: schema_version_set
-- Record a migration as applied (a concurrent init-db may have done it already).
INSERT IGNORE INTO batchq_schema (version, applied_at) VALUES (%(version)s, UTC_TIMESTAMP(6));

-- name: session_setup
-- Run first on every connection (bench/ floors too): UTC, strict (nothing silently truncated).
SET SESSION time_zone = '+00:00',
    SESSION sql_mode = CONCAT_WS(',', @@SESSION.sql_mode, 'STRICT_TRANS_TABLES');

-- name: session_isolation
-- Then READ COMMITTED: no gap locks between claimers and enqueuers (MySQL's extra session query).
SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;

-- name: server_info
-- Version and packet limit, read once at connect.
SELECT VERSION() AS version, @@max_allowed_packet AS max_allowed_packet;

-- name: galera_info
-- Is this server a node of a Galera cluster? Read once at connect. SHOW, not @@wsrep_on: MySQL
-- has no such variable (the SELECT would fail) and SHOW answers no rows there.
SHOW GLOBAL VARIABLES WHERE Variable_name IN ('wsrep_on', 'wsrep_provider');

-- name: max_allowed_packet
-- The packet limit of a connection batchq was given (enqueue(conn=...)), asked on that session.
SELECT @@max_allowed_packet AS max_allowed_packet;

-- name: liveness_lock
-- Held on the worker's connection for its whole life: free means the worker is gone.
-- The session id is the worker's to end, should a dropped connection leave it behind.
SELECT GET_LOCK(%(name)s, 0) AS acquired, CONNECTION_ID() AS session;

-- name: liveness_lock_wait
-- Take the lock, waiting up to %(wait)s seconds for a session we just ended to let go of it.
SELECT GET_LOCK(%(name)s, %(wait)s) AS acquired, CONNECTION_ID() AS session;

-- name: liveness_handover_lock
-- Held while a worker takes its lock back from its ghost: the ghost frees the lock before the
-- worker can ask for it, and a sweep must not see the worker dead in between (liveness_held
-- counts this lock too).
SELECT GET_LOCK(%(handover)s, 0) AS acquired;

-- name: liveness_handover_unlock
SELECT RELEASE_LOCK(%(handover)s) AS released;

-- name: liveness_holder
-- The session holding the worker's lock (NULL when free).
SELECT IS_USED_LOCK(%(name)s) AS session;

-- name: liveness_ghost
-- The session holding the worker's lock if it has sat idle longer than a working worker's
-- heartbeat allows. Sessions of other users show only with the PROCESS privilege.
SELECT ID AS session, TIME AS idle_seconds
FROM information_schema.PROCESSLIST
WHERE ID = IS_USED_LOCK(%(name)s) AND COMMAND = 'Sleep' AND TIME > %(idle_after)s;

-- name: end_session
-- End a ghost session holding a worker's lock (one's own user's, or any with CONNECTION_ADMIN/SUPER).
KILL CONNECTION %(session)s;

-- name: keep_session_open
-- The worker's session: no idle timeout (a job may run for hours); the server's maximum.
SET SESSION wait_timeout = 31536000;

-- name: heartbeat
-- Keeps the worker's session from sitting idle while a job runs.
SELECT 1 AS alive;

-- name: liveness_held
-- Is the worker alive: its lock (or its handover lock) held by some session, or its lease not yet
-- expired (lease liveness)? Never takes the lock.
SELECT IS_USED_LOCK(%(name)s) IS NOT NULL OR IS_USED_LOCK(%(handover)s) IS NOT NULL
       OR EXISTS (SELECT 1 FROM batchq_lease
                  WHERE owner = %(worker)s AND BINARY owner = %(worker)s
                    AND expire_at > UTC_TIMESTAMP(6)) AS held;

-- name: wsrep_sync_wait
-- On a Galera node: which statements wait until the node has applied every write set the cluster
-- committed before them (1: reads; 0: none, the default). Set around liveness_held only.
SET SESSION wsrep_sync_wait = %(checks)s;

-- name: lease_renew
-- Take or extend the worker's lease for %(ttl)s seconds (lease liveness), on the server's clock.
INSERT INTO batchq_lease (owner, expire_at, renewed_at)
VALUES (%(worker)s, UTC_TIMESTAMP(6) + INTERVAL ROUND(%(ttl)s * 1000000) MICROSECOND, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE expire_at = VALUES(expire_at), renewed_at = VALUES(renewed_at);

-- name: lease_drop
-- The worker exits: its lease goes with it.
DELETE FROM batchq_lease WHERE owner = %(worker)s AND BINARY owner = %(worker)s;

-- name: leases_prune
-- Leases of workers that died more than %(older_than)s seconds ago (gc-processing).
DELETE FROM batchq_lease
WHERE expire_at < UTC_TIMESTAMP(6) - INTERVAL ROUND(%(older_than)s * 1000000) MICROSECOND;
