-- The worker registry (batchq.ops.registry) on SQLite, by name. Times are UTC text from strftime()
-- ('now', the database's clock). serves is the worker's queues joined by commas (a queue name
-- holds none).

-- name: worker_register
-- A worker starting: its row (again, should a reconnect find it there already).
INSERT INTO batchq_worker (name, host, pid, kind, serves, heartbeat_seconds, started_at, last_seen)
VALUES (:name, :host, :pid, :kind, :serves, :heartbeat, strftime('%Y-%m-%d %H:%M:%f', 'now'),
        strftime('%Y-%m-%d %H:%M:%f', 'now'))
ON CONFLICT (name) DO UPDATE SET last_seen = strftime('%Y-%m-%d %H:%M:%f', 'now');

-- name: worker_seen
-- About once a second: the worker is here, with its counts. 0 rows: `batchq stop` asked it to
-- stop (or its row is gone; worker_stop_asked tells which).
UPDATE batchq_worker
SET last_seen = strftime('%Y-%m-%d %H:%M:%f', 'now'), jobs_done = :done, jobs_failed = :failed
WHERE name = :name AND stop_requested = 0;

-- name: worker_stop_asked
-- Whether the worker's row asks it to stop (no row: NULL).
SELECT stop_requested FROM batchq_worker WHERE name = :name;

-- name: worker_unregister
-- A worker exiting, or the row of a worker a sweep found gone.
DELETE FROM batchq_worker WHERE name = :name;

-- name: workers_list
-- Every registered worker with its ages on the database's clock and the job it runs (its oldest
-- 'processing' row; several in batch mode).
SELECT w.name, w.host, w.pid, w.kind, w.serves, w.jobs_done, w.jobs_failed, w.stop_requested,
       (julianday('now') - julianday(w.started_at)) * 86400.0 AS running_seconds,
       (julianday('now') - julianday(w.last_seen)) * 86400.0 AS seen_seconds_ago,
       j.job_id, j.jobs_held,
       (julianday('now') - julianday(j.since)) * 86400.0 AS job_seconds,
       p.progress AS job_progress, substr(p.progress_message, 1, 201) AS job_progress_message
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
WHERE (:host IS NULL OR host = :host)
  AND (:queue IS NULL OR instr(',' || serves || ',', ',' || :queue || ',') > 0)
  AND (:name IS NULL OR name = :name);

-- name: worker_stop
-- Ask one worker, found alive by workers_matching, to finish its job and exit.
UPDATE batchq_worker SET stop_requested = 1 WHERE name = :name;

-- name: worker_heartbeat
-- A registered worker's `run --heartbeat` (NULL: not recorded), for gc-processing --ghost-after.
SELECT heartbeat_seconds FROM batchq_worker WHERE name = :name;
