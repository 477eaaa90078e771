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

-- Per-key rates (migration 030): a job's rate_key, checked by the worker as the job starts
-- (batchq.stores.flow.FlowStore.start_keyed), one transaction per check (BEGIN IMMEDIATE: one
-- writer at a time, so the checks take turns).

-- name: key_rate_of_job
-- The claimed job's rate as enqueued, fenced by its claim's token (no row: a sweep took it back).
SELECT rate_limit, rate_period FROM batchq_job WHERE id = :id AND claim_token = :token;

-- name: key_rate_add
-- The key's row, made on its first check.
INSERT INTO batchq_rate_key (rate_key) VALUES (:key) ON CONFLICT (rate_key) DO NOTHING;

-- name: key_rate_lock
-- The seconds until the key's latest slot (NULL: none held back yet; negative: past), and how
-- many jobs it has.
SELECT (julianday(next_slot_at) - julianday('now')) * 86400.0 AS slot_in, slot_fill
FROM batchq_rate_key WHERE rate_key = :key;

-- name: key_rate_prune
-- Starts older than the period count no more: gone, so the table holds about one window a key
-- (and one in the future or no time at all, written by hand, would hold the key back for good:
-- text sorts above every time).
DELETE FROM batchq_rate_key_start
WHERE rate_key = :key
  AND (started_at < strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -:period))
       OR started_at > strftime('%Y-%m-%d %H:%M:%f', 'now') OR julianday(started_at) IS NULL);

-- name: key_rate_usage
-- The key's starts of the last period, and in how many seconds the oldest leaves the window.
SELECT COUNT(*) AS started,
       (julianday(MIN(started_at)) - julianday('now')) * 86400.0 + :period AS next_in
FROM batchq_rate_key_start
WHERE rate_key = :key
  AND started_at >= strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -:period));

-- name: key_rate_start
-- The job starts now: its processing_at is its start, fenced by its claim's token.
UPDATE batchq_job SET processing_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id = :id AND claim_token = :token;

-- name: key_rate_record
-- That start, counted for its key.
INSERT INTO batchq_rate_key_start (rate_key, started_at)
SELECT :key, processing_at FROM batchq_job WHERE id = :id AND claim_token = :token;

-- name: key_rate_next_slot
-- The key's latest slot, :after seconds from now, with :fill jobs given it.
UPDATE batchq_rate_key
SET next_slot_at = strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :after)), slot_fill = :fill
WHERE rate_key = :key;

-- name: key_rate_hold
-- A job over its key's rate goes back, uncounted and not run, due in :wait seconds.
UPDATE batchq_job
SET status = 'scheduled', run_at = strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :wait)),
    processing_at = NULL, locked_by = NULL, claim_token = NULL,
    rate_held_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id = :id AND claim_token = :token;
