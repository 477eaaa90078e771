-- Job history (batchq_history) on PostgreSQL: reading it, and pruning it in bounded batches.

-- name: history_list
-- Finished jobs, newest first, filtered by queue, task, outcome, age in seconds and id (each NULL:
-- any). Walks batchq_history_finished backwards (batchq_history_queue for one queue).
SELECT id, queue, task, payload, serializer, outcome, attempts, worker, enqueued_at, started_at,
       finished_at, wall_seconds, cpu_seconds, memory_peak_bytes, memory_growth_bytes, result,
       result_note, error
FROM batchq_history
WHERE (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(task)s::text IS NULL OR task = %(task)s::text)
  AND (%(outcome)s::text IS NULL OR outcome = %(outcome)s::text)
  AND (%(since)s::float8 IS NULL
       OR finished_at >= statement_timestamp() - %(since)s::float8 * interval '1 second')
  AND (%(job_id)s::bigint IS NULL OR id = %(job_id)s::bigint)
ORDER BY finished_at DESC, id DESC
LIMIT %(limit)s;

-- name: history_prune
-- Up to %(batch)s records (oldest first) finished more than %(older_than)s seconds ago, of every
-- queue: one bounded statement, its own short transaction (autocommit), walking
-- batchq_history_finished. Rows another prune is deleting are skipped, not waited for.
DELETE FROM batchq_history
WHERE id = ANY(ARRAY(
    SELECT id FROM batchq_history
    WHERE finished_at < statement_timestamp() - %(older_than)s::float8 * interval '1 second'
    ORDER BY finished_at
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
));

-- name: history_prune_queue
-- history_prune for one queue's records (walks batchq_history_queue); with spare (its keep_for's
-- prune), not those whose own keep_result has not run out: the job asked to be kept that long.
DELETE FROM batchq_history
WHERE id = ANY(ARRAY(
    SELECT id FROM batchq_history
    WHERE queue = %(queue)s
      AND finished_at < statement_timestamp() - %(older_than)s::float8 * interval '1 second'
      AND (NOT %(spare)s::boolean OR expires_at IS NULL OR expires_at <= statement_timestamp())
    ORDER BY finished_at
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
));
