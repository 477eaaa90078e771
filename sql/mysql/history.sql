-- Job history (batchq_history) on MySQL/MariaDB: reading it, and pruning it in bounded batches.

-- name: history_list
-- Finished jobs, newest first, filtered by queue, task, outcome, age in seconds and id (each NULL:
-- any). Walks batchq_history_finished backwards (batchq_history_queue for one queue).
SELECT id, queue, task, payload, serializer, CAST(outcome AS CHAR) AS outcome, attempts, worker,
       enqueued_at, started_at, finished_at, wall_seconds, cpu_seconds, memory_peak_bytes,
       memory_growth_bytes, result, result_note, error
FROM batchq_history
WHERE (%(queue)s IS NULL OR queue = %(queue)s)
  AND (%(task)s IS NULL OR task = %(task)s)
  AND (%(outcome)s IS NULL OR outcome = %(outcome)s)
  AND (%(since)s IS NULL
       OR finished_at >= UTC_TIMESTAMP(6) - INTERVAL ROUND(%(since)s * 1000000) MICROSECOND)
  AND (%(job_id)s IS NULL OR id = %(job_id)s)
ORDER BY finished_at DESC, id DESC
LIMIT %(limit)s;

-- name: history_prune
-- Up to %(batch)s records (oldest first) finished more than %(older_than)s seconds ago, of every
-- queue: one bounded statement, its own short transaction (autocommit), walking
-- batchq_history_finished; READ COMMITTED takes no gap locks, so workers writing history never
-- wait on it for more than one batch.
DELETE FROM batchq_history
WHERE finished_at < UTC_TIMESTAMP(6) - INTERVAL ROUND(%(older_than)s * 1000000) MICROSECOND
ORDER BY finished_at
LIMIT %(batch)s;

-- name: history_prune_queue
-- history_prune for one queue's records (walks batchq_history_queue); with spare (its keep_for's
-- prune), not those whose own keep_result has not run out: the job asked to be kept that long.
DELETE FROM batchq_history
WHERE queue = %(queue)s
  AND finished_at < UTC_TIMESTAMP(6) - INTERVAL ROUND(%(older_than)s * 1000000) MICROSECOND
  AND (NOT %(spare)s OR expires_at IS NULL OR expires_at <= UTC_TIMESTAMP(6))
ORDER BY finished_at
LIMIT %(batch)s;
