-- Job history (batchq_history) on SQLite: reading it, and pruning it in bounded batches.

-- name: history_list
-- Finished jobs, newest first, filtered by queue, task, outcome, age in seconds and id (each NULL:
-- any). Walks batchq_history_finished backwards (batchq_history_queue for one queue).
SELECT id, queue, task, CAST(payload AS BLOB) AS payload, serializer, outcome, attempts, worker,
       enqueued_at, started_at, finished_at, wall_seconds, cpu_seconds, memory_peak_bytes,
       memory_growth_bytes, result, result_note, error
FROM batchq_history
WHERE (:queue IS NULL OR queue = :queue)
  AND (:task IS NULL OR task = :task)
  AND (:outcome IS NULL OR outcome = :outcome)
  AND (:since IS NULL
       OR finished_at >= strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -:since)))
  AND (:job_id IS NULL OR id = :job_id)
ORDER BY finished_at DESC, id DESC
LIMIT :limit;

-- name: history_prune
-- Up to :batch records (oldest first) finished more than :older_than seconds ago, of every queue:
-- one bounded statement, its own short write transaction, walking batchq_history_finished.
DELETE FROM batchq_history
WHERE id IN (
    SELECT id FROM batchq_history
    WHERE finished_at < strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -:older_than))
    ORDER BY finished_at
    LIMIT :batch
);

-- name: history_prune_queue
-- history_prune for one queue's records (walks batchq_history_queue); with spare (its keep_for's
-- prune), not those whose own keep_result has not run out: the job asked to be kept that long.
DELETE FROM batchq_history
WHERE id IN (
    SELECT id FROM batchq_history
    WHERE queue = :queue
      AND finished_at < strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -:older_than))
      AND (NOT :spare OR expires_at IS NULL OR expires_at <= strftime('%Y-%m-%d %H:%M:%f', 'now'))
    ORDER BY finished_at
    LIMIT :batch
);
