-- The dashboard's charts on MySQL/MariaDB (batchq.ops.charts): a per-minute rollup,
-- batchq_chart_minute, written once a minute by `batchq tick`; a minute is Unix time / 60 on the
-- server's clock (TIMESTAMPDIFF from the epoch: no session time zone is involved).

-- name: chart_now
-- The minute now, and the latest minute sampled up to it (NULL: never; a future minute written
-- by hand is not taken for a sample).
SELECT TIMESTAMPDIFF(MINUTE, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS now,
       (SELECT MAX(minute) FROM batchq_chart_minute
        WHERE minute <= TIMESTAMPDIFF(MINUTE, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))
          AND depth IS NOT NULL) AS sampled;

-- name: chart_finished
-- Jobs kept in history that finished in minutes %(first)s to %(last)s (a range of
-- batchq_history_finished), per queue, minute and outcome.
SELECT queue, TIMESTAMPDIFF(MINUTE, '1970-01-01 00:00:00', finished_at) AS minute,
       CAST(outcome AS CHAR) AS outcome, COUNT(*) AS jobs
FROM batchq_history
WHERE finished_at >= TIMESTAMP '1970-01-01 00:00:00' + INTERVAL %(first)s MINUTE
  AND finished_at < TIMESTAMP '1970-01-01 00:00:00' + INTERVAL (%(last)s + 1) MINUTE
GROUP BY queue, TIMESTAMPDIFF(MINUTE, '1970-01-01 00:00:00', finished_at), outcome;

-- name: chart_failed_jobs
-- Jobs that ran out of tries in minutes %(first)s to %(last)s and are still failed rows (a walk
-- of the failed rows), per queue and minute; those kept in history are counted there.
SELECT queue, TIMESTAMPDIFF(MINUTE, '1970-01-01 00:00:00', last_error_at) AS minute, COUNT(*) AS jobs
FROM batchq_job AS j
WHERE status = 'failed'
  AND last_error_at >= TIMESTAMP '1970-01-01 00:00:00' + INTERVAL %(first)s MINUTE
  AND last_error_at < TIMESTAMP '1970-01-01 00:00:00' + INTERVAL (%(last)s + 1) MINUTE
  AND NOT EXISTS (SELECT 1 FROM batchq_history AS h WHERE h.id = j.id)
GROUP BY queue, TIMESTAMPDIFF(MINUTE, '1970-01-01 00:00:00', last_error_at);

-- name: chart_count
-- A queue's finished and failed jobs of one minute (counted again: the latest count wins).
INSERT INTO batchq_chart_minute (queue, minute, finished, failed)
VALUES (%(queue)s, %(minute)s, %(finished)s, %(failed)s)
ON DUPLICATE KEY UPDATE finished = VALUES(finished), failed = VALUES(failed);

-- name: chart_sample
-- A queue's depth and oldest due age at a minute (sampled again: the latest sample wins).
INSERT INTO batchq_chart_minute (queue, minute, depth, oldest_age_seconds)
VALUES (%(queue)s, %(minute)s, %(depth)s, %(oldest)s)
ON DUPLICATE KEY UPDATE depth = VALUES(depth), oldest_age_seconds = VALUES(oldest_age_seconds);

-- name: chart_prune
-- Up to %(limit)s minutes before %(before)s, oldest first (one short statement per batch).
DELETE FROM batchq_chart_minute WHERE minute < %(before)s ORDER BY minute LIMIT %(limit)s;

-- name: chart_read
-- Minutes %(since)s to %(until)s, per queue and bucket of %(step)s minutes (a range of
-- batchq_chart_minute_minute): the finished and failed jobs summed (below zero: none), how many
-- minutes were counted, the largest depth and oldest age.
SELECT queue, minute DIV %(step)s AS bucket,
       SUM(CASE WHEN finished > 0 THEN finished ELSE 0 END) AS finished,
       SUM(CASE WHEN failed > 0 THEN failed ELSE 0 END) AS failed,
       COUNT(finished) AS counted, MAX(depth) AS depth, MAX(oldest_age_seconds) AS oldest
FROM batchq_chart_minute
WHERE minute >= %(since)s AND minute <= %(until)s
GROUP BY queue, minute DIV %(step)s;

-- name: chart_queues
-- The queues charted since minute %(since)s (the writer keeps writing a drained queue's zeros).
SELECT DISTINCT queue FROM batchq_chart_minute WHERE minute >= %(since)s;

-- name: chart_last_sample
-- The latest minute sampled up to minute %(at)s (NULL: never).
SELECT MAX(minute) AS sampled FROM batchq_chart_minute WHERE minute <= %(at)s AND depth IS NOT NULL;
