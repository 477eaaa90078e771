-- The worker registry (batchq.ops.registry) on PostgreSQL, by name (psycopg paramstyle). Times are
-- timestamptz against clock_timestamp(), the server's clock. serves is the worker's queues
-- joined by commas (a queue name holds none).

-- name: worker_register
-- A worker starting: its row (again, should a reconnect find it there already).
INSERT INTO batchq_worker (name, host, pid, kind, serves, heartbeat_seconds, started_at, last_seen)
VALUES (%(name)s, %(host)s, %(pid)s, %(kind)s, %(serves)s, %(heartbeat)s, clock_timestamp(), clock_timestamp())
ON CONFLICT (name) DO UPDATE SET last_seen = clock_timestamp();

-- name: worker_seen
-- About once a second: the worker is here, with its counts. 0 rows: `batchq stop` asked it to
-- stop (or its row is gone; worker_stop_asked tells which).
UPDATE batchq_worker
SET last_seen = clock_timestamp(), jobs_done = %(done)s, jobs_failed = %(failed)s
WHERE name = %(name)s AND NOT stop_requested;

-- name: worker_stop_asked
-- Whether the worker's row asks it to stop (no row: NULL).
SELECT stop_requested FROM batchq_worker WHERE name = %(name)s;

-- name: worker_unregister
-- A worker exiting, or the row of a worker a sweep found gone.
DELETE FROM batchq_worker WHERE name = %(name)s;

-- name: workers_list
-- Every registered worker with its ages on the server's clock and the job it runs (its oldest
-- 'processing' row; several in batch mode). Ages as differences of epochs: a time written by
-- hand as infinity reads as an infinite age, where subtracting timestamps would fail.
SELECT w.name, w.host, w.pid, w.kind, w.serves, w.jobs_done, w.jobs_failed, w.stop_requested,
       EXTRACT(EPOCH FROM clock_timestamp()) - EXTRACT(EPOCH FROM w.started_at) AS running_seconds,
       EXTRACT(EPOCH FROM clock_timestamp()) - EXTRACT(EPOCH FROM w.last_seen) AS seen_seconds_ago,
       j.job_id, j.jobs_held,
       EXTRACT(EPOCH FROM clock_timestamp()) - EXTRACT(EPOCH FROM j.since) AS job_seconds,
       p.progress AS job_progress, left(p.progress_message, 201) AS job_progress_message
FROM batchq_worker w
LEFT JOIN (
    SELECT locked_by, MIN(id) AS job_id, COUNT(*) AS jobs_held, MIN(processing_at) AS since
    FROM batchq_job WHERE status = 'processing' GROUP BY locked_by
) j ON j.locked_by = w.name
-- The progress its job's try reported (batchq.jobs.reporting): one read of that row by its key;
-- an earlier try's (older than the claim) is not this job's progress now.
LEFT JOIN batchq_job p ON p.id = j.job_id AND p.progress_at >= p.processing_at
ORDER BY w.host, w.started_at, w.name;

-- name: workers_matching
-- The workers a `batchq stop` filter matches (every one when no filter is given).
SELECT name FROM batchq_worker
WHERE (%(host)s::text IS NULL OR host = %(host)s::text)
  AND (%(queue)s::text IS NULL OR %(queue)s::text = ANY(string_to_array(serves, ',')))
  AND (%(name)s::text IS NULL OR name = %(name)s::text);

-- name: worker_stop
-- Ask one worker, found alive by workers_matching, to finish its job and exit.
UPDATE batchq_worker SET stop_requested = true WHERE name = %(name)s::text;

-- name: worker_heartbeat
-- A registered worker's `run --heartbeat` (NULL: not recorded), for gc-processing --ghost-after.
SELECT heartbeat_seconds FROM batchq_worker WHERE name = %(name)s;
