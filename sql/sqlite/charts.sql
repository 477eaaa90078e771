-- The dashboard's charts on SQLite (batchq.ops.charts): a per-minute rollup, batchq_chart_minute,
-- written once a minute by `batchq tick`; a minute is Unix time / 60 on the database's clock.

-- name: chart_now
-- The minute now, and the latest minute sampled up to it (NULL: never; a future minute written
-- by hand is not taken for a sample).
SELECT CAST(strftime('%s', 'now') AS INTEGER) / 60 AS now,
       (SELECT MAX(minute) FROM batchq_chart_minute
        WHERE minute <= CAST(strftime('%s', 'now') AS INTEGER) / 60 AND depth IS NOT NULL) AS sampled;

-- name: chart_finished
-- Jobs kept in history that finished in minutes :first to :last (a range of
-- batchq_history_finished), per queue, minute and outcome.
SELECT queue, CAST(strftime('%s', finished_at) AS INTEGER) / 60 AS minute, outcome, COUNT(*) AS jobs
FROM batchq_history
WHERE finished_at >= strftime('%Y-%m-%d %H:%M:%f', :first * 60, 'unixepoch')
  AND finished_at < strftime('%Y-%m-%d %H:%M:%f', (:last + 1) * 60, 'unixepoch')
GROUP BY queue, CAST(strftime('%s', finished_at) AS INTEGER) / 60, outcome;

-- name: chart_failed_jobs
-- Jobs that ran out of tries in minutes :first to :last and are still failed rows (a walk of the
-- failed rows, batchq_job_status), per queue and minute; those kept in history are counted there.
SELECT queue, CAST(strftime('%s', last_error_at) AS INTEGER) / 60 AS minute, COUNT(*) AS jobs
FROM batchq_job AS j
WHERE status = 'failed'
  AND last_error_at >= strftime('%Y-%m-%d %H:%M:%f', :first * 60, 'unixepoch')
  AND last_error_at < strftime('%Y-%m-%d %H:%M:%f', (:last + 1) * 60, 'unixepoch')
  AND NOT EXISTS (SELECT 1 FROM batchq_history AS h WHERE h.id = j.id)
GROUP BY queue, CAST(strftime('%s', last_error_at) AS INTEGER) / 60;

-- name: chart_count
-- A queue's finished and failed jobs of one minute (counted again: the latest count wins).
INSERT INTO batchq_chart_minute (queue, minute, finished, failed)
VALUES (:queue, :minute, :finished, :failed)
ON CONFLICT (queue, minute) DO UPDATE SET finished = excluded.finished, failed = excluded.failed;

-- name: chart_sample
-- A queue's depth and oldest due age at a minute (sampled again: the latest sample wins).
INSERT INTO batchq_chart_minute (queue, minute, depth, oldest_age_seconds)
VALUES (:queue, :minute, :depth, :oldest)
ON CONFLICT (queue, minute) DO UPDATE SET depth = excluded.depth,
                                          oldest_age_seconds = excluded.oldest_age_seconds;

-- name: chart_prune
-- Up to :limit minutes before :before, oldest first (one short statement per batch).
DELETE FROM batchq_chart_minute
WHERE rowid IN (SELECT rowid FROM batchq_chart_minute WHERE minute < :before ORDER BY minute LIMIT :limit);

-- name: chart_read
-- Minutes :since to :until, per queue and bucket of :step minutes (a range of
-- batchq_chart_minute_minute): the finished and failed jobs summed (below zero: none), how many
-- minutes were counted, the largest depth and oldest age. TOTAL: a sum of rows written by hand
-- never overflows.
SELECT queue, minute / :step AS bucket,
       TOTAL(CASE WHEN finished > 0 THEN finished ELSE 0 END) AS finished,
       TOTAL(CASE WHEN failed > 0 THEN failed ELSE 0 END) AS failed,
       COUNT(finished) AS counted, MAX(depth) AS depth, MAX(oldest_age_seconds) AS oldest
FROM batchq_chart_minute
WHERE minute >= :since AND minute <= :until
GROUP BY queue, minute / :step;

-- name: chart_queues
-- The queues charted since minute :since (the writer keeps writing a drained queue's zeros).
SELECT DISTINCT queue FROM batchq_chart_minute WHERE minute >= :since;

-- name: chart_last_sample
-- The latest minute sampled up to minute :at (NULL: never).
SELECT MAX(minute) AS sampled FROM batchq_chart_minute WHERE minute <= :at AND depth IS NOT NULL;
