-- Partitioned claims (batchq.coordination.partitions) on SQLite, by name. Times are UTC text from strftime()
-- ('now', the database's clock), compared as text. A partition is leased while its expire_at is
-- in the future; lock_by names the worker that leased it last. A release sets expire_at to now,
-- so the least recently released partition is the next one leased. Lists come as JSON arrays.

-- name: partitions_count
-- How many partitions jobs are spread over (0: partitioned claims are not set up).
SELECT COUNT(*) AS partitions FROM batchq_partition;

-- name: partitions_list
-- Every partition with its last holder and the database's view of its lease.
SELECT partition_no, lock_by, leased_at,
       (lock_by IS NOT NULL AND expire_at > strftime('%Y-%m-%d %H:%M:%f', 'now')) AS held,
       round((julianday(expire_at) - julianday('now')) * 86400.0, 3) AS expires_in
FROM batchq_partition
ORDER BY partition_no;

-- name: partition_add
-- One partition, free, if it does not exist yet.
INSERT INTO batchq_partition (partition_no, expire_at) VALUES (:partition, strftime('%Y-%m-%d %H:%M:%f', 'now'))
ON CONFLICT (partition_no) DO NOTHING;

-- name: partitions_drop_above
-- The partitions from :count up, when their number goes down.
DELETE FROM batchq_partition WHERE partition_no >= :count;

-- name: partition_index_exists
-- Is batchq_job_partition there (made by `batchq partitions set`)?
SELECT COUNT(*) AS present FROM sqlite_master WHERE type = 'index' AND name = 'batchq_job_partition';

-- name: partition_index_clear
-- Before partition_index_create: nothing to clear here (a failed index build leaves nothing).
SELECT 1 AS cleared;

-- name: partition_index_create
-- The index partitioned claims walk: a partition's due jobs of a queue in the claim's order,
-- partial (only 'ready' rows).
CREATE INDEX IF NOT EXISTS batchq_job_partition ON batchq_job (queue, claim_partition, priority DESC, run_at, id)
    WHERE status = 'ready';

-- name: partition_index_drop
-- Partitioned claims switched off: row claims pay nothing for an index they do not use.
DROP INDEX IF EXISTS batchq_job_partition;

-- name: partition_lease
-- Lease the least recently used free partition holding a due job of the worker's queues (ties,
-- within the clock's resolution: the one leased longest ago, never leased first), for
-- :ttl seconds. A lease the worker itself still holds counts as free to it (its release failed
-- midway).
UPDATE batchq_partition
SET lock_by = :worker, leased_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    expire_at = strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :ttl))
WHERE partition_no = (
    SELECT f.partition_no FROM batchq_partition f
    WHERE (f.expire_at <= strftime('%Y-%m-%d %H:%M:%f', 'now') OR f.lock_by = :worker)
      AND EXISTS (SELECT 1 FROM batchq_job j
                  WHERE j.queue IN (SELECT value FROM json_each(:queues)) AND j.status = 'ready'
                    AND j.claim_partition = f.partition_no)
    ORDER BY f.expire_at, f.leased_at
    LIMIT 1
)
RETURNING partition_no;

-- name: partition_renew
-- Extend a lease that is still ours; 0 rows when it expired (another may hold it now).
UPDATE batchq_partition
SET expire_at = strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :ttl))
WHERE partition_no = :partition AND lock_by = :worker AND expire_at > strftime('%Y-%m-%d %H:%M:%f', 'now');

-- name: partition_release
-- End a lease of :worker (the worker's own, or a dead worker's): free from now on.
UPDATE batchq_partition SET expire_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE partition_no = :partition AND lock_by = :worker AND expire_at > strftime('%Y-%m-%d %H:%M:%f', 'now');

-- name: partitions_leased
-- Partitions leased by other workers, for a worker that found no free one to ask whether their
-- holders are alive.
SELECT partition_no, lock_by FROM batchq_partition
WHERE expire_at > strftime('%Y-%m-%d %H:%M:%f', 'now') AND lock_by IS NOT NULL AND lock_by <> :worker
ORDER BY expire_at;

-- name: partition_jobs_due
-- Does any queue of the worker hold a due job, in whatever partition there is? (A worker that
-- finds no free partition with work exits only when none does.)
SELECT EXISTS (SELECT 1 FROM batchq_job JOIN batchq_partition ON partition_no = claim_partition
               WHERE queue IN (SELECT value FROM json_each(:queues)) AND status = 'ready'
                 AND run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')) AS due;

-- name: jobs_repartition
-- Due jobs of the given queues in a partition that no longer exists (the count went down, or a
-- producer still knew the old count) move to one that does; a bounded batch per statement.
UPDATE batchq_job SET claim_partition = claim_partition % :count
WHERE id IN (
    SELECT id FROM batchq_job
    WHERE queue IN (SELECT value FROM json_each(:queues)) AND status = 'ready' AND claim_partition >= :count
    LIMIT 1000
);
