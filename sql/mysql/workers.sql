-- The worker registry (batchq.ops.registry) on MySQL/MariaDB, by name (PyMySQL paramstyle). Times
-- are UTC DATETIME(6) against UTC_TIMESTAMP(6), the server's clock. serves is the worker's
-- queues joined by commas (a queue name holds none). Names and hosts are compared as BINARY too:
-- the tables' utf8mb4_bin is PAD SPACE, so name = 'vm ' alone would match 'vm'. The name's own
-- equality stays beside it, for its primary key.

-- name: worker_register
-- A worker starting: its row (again, should a reconnect find it there already).
INSERT INTO batchq_worker (name, host, pid, kind, serves, heartbeat_seconds, started_at, last_seen)
VALUES (%(name)s, %(host)s, %(pid)s, %(kind)s, %(serves)s, %(heartbeat)s, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE last_seen = UTC_TIMESTAMP(6);

-- name: worker_seen
-- About once a second: the worker is here, with its counts. 0 rows: `batchq stop` asked it to
-- stop (or its row is gone; worker_stop_asked tells which).
UPDATE batchq_worker
SET last_seen = UTC_TIMESTAMP(6), jobs_done = %(done)s, jobs_failed = %(failed)s
WHERE name = %(name)s AND BINARY name = %(name)s AND stop_requested = 0;

-- name: worker_stop_asked
-- Whether the worker's row asks it to stop (no row: NULL).
SELECT stop_requested FROM batchq_worker WHERE name = %(name)s AND BINARY name = %(name)s;

-- name: worker_unregister
-- A worker exiting, or the row of a worker a sweep found gone.
DELETE FROM batchq_worker WHERE name = %(name)s AND BINARY name = %(name)s;

-- name: workers_list
-- Every registered worker with its ages on the server's clock and the job it runs (its oldest
-- 'processing' row; several in batch mode).
SELECT w.name, w.host, w.pid, w.kind, w.serves, w.jobs_done, w.jobs_failed, w.stop_requested,
       TIMESTAMPDIFF(MICROSECOND, w.started_at, UTC_TIMESTAMP(6)) / 1e6 AS running_seconds,
       TIMESTAMPDIFF(MICROSECOND, w.last_seen, UTC_TIMESTAMP(6)) / 1e6 AS seen_seconds_ago,
       j.job_id, j.jobs_held,
       TIMESTAMPDIFF(MICROSECOND, j.since, UTC_TIMESTAMP(6)) / 1e6 AS job_seconds,
       p.progress AS job_progress, SUBSTRING(p.progress_message, 1, 201) AS job_progress_message
FROM batchq_worker w
LEFT JOIN (
    SELECT locked_by, MIN(id) AS job_id, COUNT(*) AS jobs_held, MIN(processing_at) AS since
    FROM batchq_job WHERE status = 'processing' GROUP BY locked_by
) j ON BINARY j.locked_by = w.name
-- The progress its job's try reported (batchq.jobs.reporting): one read of that row by its key;
-- an earlier try's (older than the claim) is not this job's progress now.
LEFT JOIN batchq_job p ON p.id = j.job_id AND p.progress_at >= p.processing_at
ORDER BY w.host, w.started_at, w.name;

-- name: workers_matching
-- The workers a `batchq stop` filter matches (every one when no filter is given). Hosts and
-- names compare exactly (BINARY: utf8mb4_bin is PAD SPACE, so 'vm ' would match 'vm').
SELECT name FROM batchq_worker
WHERE (%(host)s IS NULL OR BINARY host = %(host)s)
  AND (%(queue)s IS NULL OR FIND_IN_SET(%(queue)s, serves) > 0)
  AND (%(name)s IS NULL OR BINARY name = %(name)s);

-- name: worker_stop
-- Ask one worker, found alive by workers_matching, to finish its job and exit.
UPDATE batchq_worker SET stop_requested = 1 WHERE name = %(name)s AND BINARY name = %(name)s;

-- name: worker_heartbeat
-- A registered worker's `run --heartbeat` (NULL: not recorded), for gc-processing --ghost-after.
SELECT heartbeat_seconds FROM batchq_worker WHERE name = %(name)s AND BINARY name = %(name)s;
