-- Flow control of job queues (batchq.policy.flow, batchq.stores.flow): rate and running limits on a
-- queue's batchq_queue row; the starts of rate-limited queues in batchq_queue_start, on the
-- database's clock (statement_timestamp()).

-- name: flow_limits
-- The job queues with a rate or running limit (or :queue's, if it has one): what workers read in
-- their tick to know which of their queues to claim from through the limited claim.
SELECT name, rate_limit, rate_period, max_running FROM batchq_queue
WHERE (%(queue)s::text IS NULL OR name = %(queue)s) AND (rate_limit IS NOT NULL OR max_running IS NOT NULL)
ORDER BY name;

-- name: flow_set_rate
-- Set or lift (NULL) a queue's rate limit; a queue without a row gets one.
INSERT INTO batchq_queue (name, paused, rate_limit, rate_period)
VALUES (%(queue)s, false, %(rate_limit)s::integer, %(rate_period)s::float8)
ON CONFLICT (name) DO UPDATE SET rate_limit = excluded.rate_limit, rate_period = excluded.rate_period;

-- name: flow_set_max_running
-- Set or lift (NULL) a queue's running limit; a queue without a row gets one.
INSERT INTO batchq_queue (name, paused, max_running) VALUES (%(queue)s, false, %(max_running)s::integer)
ON CONFLICT (name) DO UPDATE SET max_running = excluded.max_running;

-- name: flow_forget_starts
-- A queue's recorded starts, once its rate limit is lifted.
DELETE FROM batchq_queue_start WHERE queue = %(queue)s;

-- name: flow_lock
-- The limited claim's first statement, inside its transaction: lock the queue's row (limited
-- claimers of one queue take turns) and read its limits as they stand. The statements after it
-- read with snapshots taken once the lock is held (READ COMMITTED), so they see every start and
-- every claim the claimer before committed.
SELECT rate_limit, rate_period, max_running FROM batchq_queue WHERE name = %(queue)s FOR UPDATE;

-- name: flow_prune
-- Starts older than the rate's period count no more: gone, so the table holds about one window.
DELETE FROM batchq_queue_start
WHERE queue = %(queue)s AND started_at < statement_timestamp() - %(period)s::float8 * interval '1 second';

-- name: flow_usage
-- What the limits allow now: the starts of the last period (none without a rate), when the
-- oldest of them leaves the window (and in how many seconds), the queue's running jobs, and
-- whether a due job waits (a claim held back by a limit, not an empty queue). Read by the
-- limited claim after flow_lock, and by `batchq explain` without it. The running jobs are every
-- queue's, read through batchq_job_due's status prefix (no index of 'processing' rows by queue:
-- a claim's UPDATE would enter it for every job).
SELECT (SELECT count(*) FROM batchq_queue_start
        WHERE queue = %(queue)s
          AND started_at >= statement_timestamp() - %(period)s::float8 * interval '1 second') AS started,
       (SELECT min(started_at) + %(period)s::float8 * interval '1 second' FROM batchq_queue_start
        WHERE queue = %(queue)s
          AND started_at >= statement_timestamp() - %(period)s::float8 * interval '1 second') AS next_at,
       (SELECT EXTRACT(EPOCH FROM min(started_at) - statement_timestamp())::float8 + %(period)s::float8
        FROM batchq_queue_start
        WHERE queue = %(queue)s
          AND started_at >= statement_timestamp() - %(period)s::float8 * interval '1 second') AS next_in,
       (SELECT count(*) FROM batchq_job WHERE queue = %(queue)s AND status = 'processing') AS running,
       EXISTS (SELECT 1 FROM batchq_job
               WHERE queue = %(queue)s AND status = 'ready' AND run_at <= statement_timestamp()) AS due;

-- name: flow_record_starts
-- After the claim, in its transaction: the claimed jobs' starts, at their processing_at.
INSERT INTO batchq_queue_start (queue, started_at)
SELECT queue, processing_at FROM batchq_job
WHERE id = ANY(%(ids)s::bigint[]) AND claim_token = %(token)s;
