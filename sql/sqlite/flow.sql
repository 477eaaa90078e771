-- Flow control of job queues (batchq.policy.flow, batchq.stores.flow): rate and running limits on a
-- queue's batchq_queue row; the starts of rate-limited queues in batchq_queue_start. Times are
-- the stored text of processing_at ('YYYY-MM-DD HH:MM:SS.SSS', UTC), on the database's clock.

-- name: flow_limits
-- The job queues with a rate or running limit (or :queue's, if it has one): what workers read in
-- their tick to know which of their queues to claim from through the limited claim.
SELECT name, rate_limit, rate_period, max_running FROM batchq_queue
WHERE (:queue IS NULL OR name = :queue) AND (rate_limit IS NOT NULL OR max_running IS NOT NULL)
ORDER BY name;

-- name: flow_set_rate
-- Set or lift (NULL) a queue's rate limit; a queue without a row gets one.
INSERT INTO batchq_queue (name, paused, rate_limit, rate_period) VALUES (:queue, 0, :rate_limit, :rate_period)
ON CONFLICT (name) DO UPDATE SET rate_limit = excluded.rate_limit, rate_period = excluded.rate_period;

-- name: flow_set_max_running
-- Set or lift (NULL) a queue's running limit; a queue without a row gets one.
INSERT INTO batchq_queue (name, paused, max_running) VALUES (:queue, 0, :max_running)
ON CONFLICT (name) DO UPDATE SET max_running = excluded.max_running;

-- name: flow_forget_starts
-- A queue's recorded starts, once its rate limit is lifted.
DELETE FROM batchq_queue_start WHERE queue = :queue;

-- name: flow_lock
-- The limited claim's first statement, inside BEGIN IMMEDIATE (which lets one writer in at a
-- time, so limited claimers take turns): the queue's limits as they stand.
SELECT rate_limit, rate_period, max_running FROM batchq_queue WHERE name = :queue;

-- name: flow_prune
-- Starts older than the rate's period count no more: gone, so the table holds about one window.
DELETE FROM batchq_queue_start
WHERE queue = :queue
  AND started_at < strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -:period));

-- name: flow_usage
-- What the limits allow now: the starts of the last period (none without a rate), when the
-- oldest of them leaves the window (and in how many seconds), the queue's running jobs, and
-- whether a due job waits (a claim held back by a limit, not an empty queue). Read by the
-- limited claim after flow_lock, and by `batchq explain` without it.
SELECT (SELECT COUNT(*) FROM batchq_queue_start
        WHERE queue = :queue AND :period IS NOT NULL
          AND started_at >= strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -:period))) AS started,
       (SELECT strftime('%Y-%m-%d %H:%M:%f', MIN(started_at), printf('%+.6f seconds', :period))
        FROM batchq_queue_start
        WHERE queue = :queue AND :period IS NOT NULL
          AND started_at >= strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -:period))) AS next_at,
       (SELECT (julianday(MIN(started_at)) - julianday('now')) * 86400.0 + :period FROM batchq_queue_start
        WHERE queue = :queue AND :period IS NOT NULL
          AND started_at >= strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -:period))) AS next_in,
       (SELECT COUNT(*) FROM batchq_job WHERE queue = :queue AND status = 'processing') AS running,
       EXISTS (SELECT 1 FROM batchq_job
               WHERE queue = :queue AND status = 'ready'
                 AND run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')) AS due;

-- name: flow_record_starts
-- After the claim, in its transaction: the claimed jobs' starts, at their processing_at.
INSERT INTO batchq_queue_start (queue, started_at)
SELECT queue, processing_at FROM batchq_job
WHERE id IN (SELECT value FROM json_each(:ids)) AND claim_token = :token;
