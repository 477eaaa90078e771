-- The dashboard's charts on PostgreSQL (batchq.ops.charts): a per-minute rollup,
-- batchq_chart_minute, written once a minute by `batchq tick`; a minute is Unix time / 60 on the
-- server's clock.

-- name: chart_now
-- The minute now, and the latest minute sampled up to it (NULL: never; a future minute written
-- by hand is not taken for a sample).
SELECT FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) / 60)::bigint AS now,
       (SELECT MAX(minute) FROM batchq_chart_minute
        WHERE minute <= FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) / 60)::bigint
          AND depth IS NOT NULL) AS sampled;

-- name: chart_finished
-- Jobs kept in history that finished in minutes %(first)s to %(last)s (a range of
-- batchq_history_finished), per queue, minute and outcome.
SELECT queue, FLOOR(EXTRACT(EPOCH FROM finished_at) / 60)::bigint AS minute, outcome, COUNT(*) AS jobs
FROM batchq_history
WHERE finished_at >= to_timestamp(%(first)s::bigint * 60)
  AND finished_at < to_timestamp((%(last)s::bigint + 1) * 60)
GROUP BY queue, FLOOR(EXTRACT(EPOCH FROM finished_at) / 60)::bigint, outcome;

-- name: chart_failed_jobs
-- Jobs that ran out of tries in minutes %(first)s to %(last)s and are still failed rows (a walk
-- of the failed rows), per queue and minute; those kept in history are counted there.
SELECT queue, FLOOR(EXTRACT(EPOCH FROM last_error_at) / 60)::bigint AS minute, COUNT(*) AS jobs
FROM batchq_job AS j
WHERE status = 'failed'
  AND last_error_at >= to_timestamp(%(first)s::bigint * 60)
  AND last_error_at < to_timestamp((%(last)s::bigint + 1) * 60)
  AND NOT EXISTS (SELECT 1 FROM batchq_history AS h WHERE h.id = j.id)
GROUP BY queue, FLOOR(EXTRACT(EPOCH FROM last_error_at) / 60)::bigint;

-- name: chart_count
-- A queue's finished and failed jobs of one minute (counted again: the latest count wins).
INSERT INTO batchq_chart_minute (queue, minute, finished, failed)
VALUES (%(queue)s, %(minute)s, %(finished)s, %(failed)s)
ON CONFLICT (queue, minute) DO UPDATE SET finished = EXCLUDED.finished, failed = EXCLUDED.failed;

-- name: chart_sample
-- A queue's depth and oldest due age at a minute (sampled again: the latest sample wins).
INSERT INTO batchq_chart_minute (queue, minute, depth, oldest_age_seconds)
VALUES (%(queue)s, %(minute)s, %(depth)s, %(oldest)s)
ON CONFLICT (queue, minute) DO UPDATE SET depth = EXCLUDED.depth,
                                          oldest_age_seconds = EXCLUDED.oldest_age_seconds;

-- name: chart_prune
-- Up to %(limit)s minutes before %(before)s, oldest first (one short statement per batch).
DELETE FROM batchq_chart_minute
WHERE ctid IN (SELECT ctid FROM batchq_chart_minute WHERE minute < %(before)s ORDER BY minute
               LIMIT %(limit)s);

-- name: chart_read
-- Minutes %(since)s to %(until)s, per queue and bucket of %(step)s minutes (a range of
-- batchq_chart_minute_minute): the finished and failed jobs summed (below zero: none), how many
-- minutes were counted, the largest depth and oldest age.
SELECT queue, minute / %(step)s::bigint AS bucket,
       SUM(CASE WHEN finished > 0 THEN finished ELSE 0 END) AS finished,
       SUM(CASE WHEN failed > 0 THEN failed ELSE 0 END) AS failed,
       COUNT(finished) AS counted, MAX(depth) AS depth, MAX(oldest_age_seconds) AS oldest
FROM batchq_chart_minute
WHERE minute >= %(since)s AND minute <= %(until)s
GROUP BY queue, minute / %(step)s::bigint;

-- name: chart_queues
-- The queues charted since minute %(since)s (the writer keeps writing a drained queue's zeros).
SELECT DISTINCT queue FROM batchq_chart_minute WHERE minute >= %(since)s;

-- name: chart_last_sample
-- The latest minute sampled up to minute %(at)s (NULL: never).
SELECT MAX(minute) AS sampled FROM batchq_chart_minute WHERE minute <= %(at)s AND depth IS NOT NULL;
