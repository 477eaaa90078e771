-- Partitioned claims (batchq.coordination.partitions) on MySQL/MariaDB, by name (PyMySQL paramstyle). A
-- partition is leased while its expire_at is in the future (UTC_TIMESTAMP(6), the server's
-- clock); lock_by names the worker that leased it last. A release sets expire_at to now, so the
-- least recently released partition is the next one leased. Holders are compared as BINARY:
-- utf8mb4_bin is PAD SPACE, which ignores trailing spaces.

-- name: partitions_count
-- How many partitions jobs are spread over (0: partitioned claims are not set up).
SELECT COUNT(*) AS partitions FROM batchq_partition;

-- name: partitions_list
-- Every partition with its last holder and the server's view of its lease.
SELECT partition_no, lock_by, leased_at,
       (lock_by IS NOT NULL AND expire_at > UTC_TIMESTAMP(6)) AS held,
       TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expire_at) / 1e6 AS expires_in
FROM batchq_partition
ORDER BY partition_no;

-- name: partition_add
-- One partition, free, if it does not exist yet.
INSERT IGNORE INTO batchq_partition (partition_no, expire_at) VALUES (%(partition)s, UTC_TIMESTAMP(6));

-- name: partitions_drop_above
-- The partitions from %(count)s up, when their number goes down.
DELETE FROM batchq_partition WHERE partition_no >= %(count)s;

-- name: partition_index_exists
-- Is batchq_job_partition there (made by `batchq partitions set`)?
SELECT COUNT(*) AS present FROM information_schema.STATISTICS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'batchq_job' AND INDEX_NAME = 'batchq_job_partition';

-- name: partition_index_clear
-- Before partition_index_create: nothing to clear here (a failed index build leaves nothing).
SELECT 1 AS cleared;

-- name: partition_index_create
-- The index partitioned claims walk: a partition's due jobs of a queue in the claim's order.
-- Online (InnoDB builds it without blocking enqueues).
CREATE INDEX batchq_job_partition ON batchq_job (queue, status, claim_partition, priority DESC, run_at, id);

-- name: partition_index_drop
-- Partitioned claims switched off: row claims pay nothing for an index they do not use.
DROP INDEX batchq_job_partition ON batchq_job;

-- name: partition_lease
-- Lease the least recently used free partition holding a due job of the worker's queues (ties,
-- within the clock's resolution: the one leased longest ago, never leased first), for
-- %(ttl)s seconds; partition_leased then reads which one it was. A lease the worker itself still
-- holds counts as free to it (its release or its reading of the lease failed midway).
UPDATE batchq_partition p
SET lock_by = %(worker)s, leased_at = UTC_TIMESTAMP(6),
    expire_at = UTC_TIMESTAMP(6) + INTERVAL ROUND(%(ttl)s * 1000000) MICROSECOND
WHERE (p.expire_at <= UTC_TIMESTAMP(6) OR BINARY p.lock_by = %(worker)s)
  AND EXISTS (SELECT 1 FROM batchq_job j
              WHERE j.queue IN %(queues)s AND j.status = 'ready' AND j.claim_partition = p.partition_no)
ORDER BY p.expire_at, p.leased_at
LIMIT 1;

-- name: partition_leased
-- The partition partition_lease just gave this worker (the newest, should an older lease it could
-- not release still run).
SELECT partition_no FROM batchq_partition
WHERE BINARY lock_by = %(worker)s AND expire_at > UTC_TIMESTAMP(6)
ORDER BY leased_at DESC
LIMIT 1;

-- name: partition_renew
-- Extend a lease that is still ours; 0 rows when it expired (another may hold it now).
UPDATE batchq_partition
SET expire_at = UTC_TIMESTAMP(6) + INTERVAL ROUND(%(ttl)s * 1000000) MICROSECOND
WHERE partition_no = %(partition)s AND BINARY lock_by = %(worker)s AND expire_at > UTC_TIMESTAMP(6);

-- name: partition_release
-- End a lease of %(worker)s (the worker's own, or a dead worker's): free from now on.
UPDATE batchq_partition SET expire_at = UTC_TIMESTAMP(6)
WHERE partition_no = %(partition)s AND BINARY lock_by = %(worker)s AND expire_at > UTC_TIMESTAMP(6);

-- name: partitions_leased
-- Partitions leased by other workers, for a worker that found no free one to ask whether their
-- holders are alive.
SELECT partition_no, lock_by FROM batchq_partition
WHERE expire_at > UTC_TIMESTAMP(6) AND lock_by IS NOT NULL AND lock_by <> %(worker)s
ORDER BY expire_at;

-- name: partition_jobs_due
-- Does any queue of the worker hold a due job, in whatever partition there is? (A worker that
-- finds no free partition with work exits only when none does.)
SELECT EXISTS (SELECT 1 FROM batchq_job JOIN batchq_partition ON partition_no = claim_partition
               WHERE queue IN %(queues)s AND status = 'ready' AND run_at <= UTC_TIMESTAMP(6)) AS due;

-- name: jobs_repartition
-- Due jobs of the given queues in a partition that no longer exists (the count went down, or a
-- producer still knew the old count) move to one that does; a bounded batch per statement.
UPDATE batchq_job SET claim_partition = claim_partition MOD %(count)s
WHERE queue IN %(queues)s AND status = 'ready' AND claim_partition >= %(count)s
LIMIT 1000;
