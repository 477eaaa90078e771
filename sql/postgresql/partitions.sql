-- Partitioned claims (batchq.coordination.partitions) on PostgreSQL, by name (psycopg paramstyle). A
-- partition is leased while its expire_at is in the future (clock_timestamp(), the server's
-- clock); lock_by names the worker that leased it last. A release sets expire_at to now, so the
-- least recently released partition is the next one leased.

-- name: partitions_count
-- How many partitions jobs are spread over (0: partitioned claims are not set up).
SELECT COUNT(*) AS partitions FROM batchq_partition;

-- name: partitions_list
-- Every partition with its last holder and the server's view of its lease.
SELECT partition_no, lock_by, leased_at,
       (lock_by IS NOT NULL AND expire_at > clock_timestamp()) AS held,
       EXTRACT(EPOCH FROM expire_at - clock_timestamp())::float8 AS expires_in
FROM batchq_partition
ORDER BY partition_no;

-- name: partition_add
-- One partition, free, if it does not exist yet.
INSERT INTO batchq_partition (partition_no, expire_at) VALUES (%(partition)s, clock_timestamp())
ON CONFLICT (partition_no) DO NOTHING;

-- name: partitions_drop_above
-- The partitions from %(count)s up, when their number goes down.
DELETE FROM batchq_partition WHERE partition_no >= %(count)s;

-- name: partition_index_exists
-- Is a valid batchq_job_partition there (made by `batchq partitions set`)? A CREATE INDEX
-- CONCURRENTLY that failed leaves an invalid one, which partition_index_create replaces.
SELECT COUNT(*) AS present FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE c.relname = 'batchq_job_partition' AND c.relnamespace = to_regnamespace(current_schema())
  AND i.indisvalid;

-- name: partition_index_clear
-- Before partition_index_create: the invalid index a failed CREATE INDEX CONCURRENTLY left.
DROP INDEX CONCURRENTLY IF EXISTS batchq_job_partition;

-- name: partition_index_create
-- The index partitioned claims walk: a partition's due jobs of a queue in the claim's order,
-- partial (only 'ready' rows). Built CONCURRENTLY: enqueues and claims go on meanwhile.
CREATE INDEX CONCURRENTLY batchq_job_partition ON batchq_job (queue, claim_partition, priority DESC, run_at, id)
    WHERE status = 'ready';

-- name: partition_index_drop
-- Partitioned claims switched off: row claims pay nothing for an index they do not use.
DROP INDEX CONCURRENTLY IF EXISTS batchq_job_partition;

-- name: partition_lease
-- Lease the least recently used free partition holding a due job of the worker's queues (ties,
-- within the clock's resolution: the one leased longest ago, never leased first), for
-- %(ttl)s seconds. SKIP LOCKED: a partition another worker is leasing this instant is passed over.
-- A lease the worker itself still holds counts as free to it (its release failed midway).
UPDATE batchq_partition AS p
SET lock_by = %(worker)s, leased_at = clock_timestamp(),
    expire_at = clock_timestamp() + %(ttl)s::float8 * interval '1 second'
WHERE p.partition_no = (
    SELECT f.partition_no FROM batchq_partition f
    WHERE (f.expire_at <= clock_timestamp() OR f.lock_by = %(worker)s)
      AND EXISTS (SELECT 1 FROM batchq_job j
                  WHERE j.queue = ANY(%(queues)s::text[]) AND j.status = 'ready'
                    AND j.claim_partition = f.partition_no)
    ORDER BY f.expire_at, f.leased_at NULLS FIRST
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
RETURNING p.partition_no;

-- name: partition_renew
-- Extend a lease that is still ours; 0 rows when it expired (another may hold it now).
UPDATE batchq_partition
SET expire_at = clock_timestamp() + %(ttl)s::float8 * interval '1 second'
WHERE partition_no = %(partition)s AND lock_by = %(worker)s AND expire_at > clock_timestamp();

-- name: partition_release
-- End a lease of %(worker)s (the worker's own, or a dead worker's): free from now on.
UPDATE batchq_partition SET expire_at = clock_timestamp()
WHERE partition_no = %(partition)s AND lock_by = %(worker)s AND expire_at > clock_timestamp();

-- name: partitions_leased
-- Partitions leased by other workers, for a worker that found no free one to ask whether their
-- holders are alive.
SELECT partition_no, lock_by FROM batchq_partition
WHERE expire_at > clock_timestamp() AND lock_by IS NOT NULL AND lock_by <> %(worker)s
ORDER BY expire_at;

-- name: partition_jobs_due
-- Does any queue of the worker hold a due job, in whatever partition there is? (A worker that
-- finds no free partition with work exits only when none does.)
SELECT EXISTS (SELECT 1 FROM batchq_job JOIN batchq_partition ON partition_no = claim_partition
               WHERE queue = ANY(%(queues)s::text[]) AND status = 'ready' AND run_at <= clock_timestamp()) AS due;

-- name: jobs_repartition
-- Due jobs of the given queues in a partition that no longer exists (the count went down, or a
-- producer still knew the old count) move to one that does; a bounded batch per statement.
-- = ANY(ARRAY(...)): the batch is picked once. With stale statistics (autovacuum off) a plain
-- IN (...) was planned as a semi join re-running the locking subquery per row: seconds per tick.
UPDATE batchq_job SET claim_partition = claim_partition %% %(count)s
WHERE id = ANY(ARRAY(
    SELECT id FROM batchq_job
    WHERE queue = ANY(%(queues)s::text[]) AND status = 'ready' AND claim_partition >= %(count)s
    LIMIT 1000
    FOR UPDATE SKIP LOCKED
));
