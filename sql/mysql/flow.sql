-- Flow control of job queues (batchq.policy.flow, batchq.stores.flow), on MySQL/MariaDB: rate and
-- running limits on a queue's batchq_queue row; the starts of rate-limited queues in
-- batchq_queue_start, on the database's clock (UTC_TIMESTAMP(6)).

-- name: flow_limits
-- The job queues with a rate or running limit (or :queue's, if it has one): what workers read in
-- their tick to know which of their queues to claim from through the limited claim.
SELECT name, rate_limit, rate_period, max_running FROM batchq_queue
WHERE (%(queue)s IS NULL OR name = %(queue)s) AND (rate_limit IS NOT NULL OR max_running IS NOT NULL)
ORDER BY name;

-- name: flow_set_rate
-- Set or lift (NULL) a queue's rate limit; a queue without a row gets one.
INSERT INTO batchq_queue (name, paused, rate_limit, rate_period)
VALUES (%(queue)s, 0, %(rate_limit)s, %(rate_period)s)
ON DUPLICATE KEY UPDATE rate_limit = VALUES(rate_limit), rate_period = VALUES(rate_period);

-- name: flow_set_max_running
-- Set or lift (NULL) a queue's running limit; a queue without a row gets one.
INSERT INTO batchq_queue (name, paused, max_running) VALUES (%(queue)s, 0, %(max_running)s)
ON DUPLICATE KEY UPDATE max_running = VALUES(max_running);

-- name: flow_forget_starts
-- A queue's recorded starts, once its rate limit is lifted.
DELETE FROM batchq_queue_start WHERE queue = %(queue)s;

-- name: flow_lock
-- The limited claim's first statement, inside its transaction (the session's READ COMMITTED):
-- lock the queue's row (limited claimers of one queue take turns) and read its limits as they
-- stand. Each read after it takes a fresh snapshot, so it sees every start and every claim the
-- claimer before committed.
SELECT rate_limit, rate_period, max_running FROM batchq_queue WHERE name = %(queue)s FOR UPDATE;

-- name: flow_prune
-- Starts older than the rate's period count no more: gone, so the table holds about one window.
DELETE FROM batchq_queue_start
WHERE queue = %(queue)s AND started_at < UTC_TIMESTAMP(6) - INTERVAL ROUND(%(period)s * 1000000) MICROSECOND;

-- name: flow_usage
-- What the limits allow now: the starts of the last period (none without a rate), when the
-- oldest of them leaves the window (and in how many seconds), the queue's running jobs, and
-- whether a due job waits (a claim held back by a limit, not an empty queue). Read by the
-- limited claim after flow_lock, and by `batchq explain` without it.
SELECT (SELECT COUNT(*) FROM batchq_queue_start
        WHERE queue = %(queue)s
          AND started_at >= UTC_TIMESTAMP(6) - INTERVAL ROUND(%(period)s * 1000000) MICROSECOND) AS started,
       (SELECT MIN(started_at) + INTERVAL ROUND(%(period)s * 1000000) MICROSECOND FROM batchq_queue_start
        WHERE queue = %(queue)s
          AND started_at >= UTC_TIMESTAMP(6) - INTERVAL ROUND(%(period)s * 1000000) MICROSECOND) AS next_at,
       (SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), MIN(started_at)) / 1e6 + %(period)s
        FROM batchq_queue_start
        WHERE queue = %(queue)s
          AND started_at >= UTC_TIMESTAMP(6) - INTERVAL ROUND(%(period)s * 1000000) MICROSECOND) AS next_in,
       (SELECT COUNT(*) FROM batchq_job WHERE queue = %(queue)s AND status = 'processing') AS running,
       EXISTS (SELECT 1 FROM batchq_job
               WHERE queue = %(queue)s AND status = 'ready' AND run_at <= UTC_TIMESTAMP(6)) AS due;

-- name: flow_claim_pick
-- The limited claim after flow_usage, in its transaction: lock the next due jobs of the queue, at
-- most what the limits allow (jobs_claim's order and conditions). Plain FOR UPDATE, on every
-- server: limited claimers of the queue already take turns on its row.
{{claim_pick}}
FOR UPDATE;

-- name: flow_claim_mark
-- Mark the jobs flow_claim_pick locked as ours, with the claim's token (jobs_claim_mark without
-- its COMMIT: the limited claim's transaction goes on).
{{claim_mark}}

-- name: flow_record_starts
-- After the claim, in its transaction: the claimed jobs' starts, at their processing_at.
INSERT INTO batchq_queue_start (queue, started_at)
SELECT queue, processing_at FROM batchq_job
WHERE id IN %(ids)s AND claim_token = %(token)s;

-- Per-key rates (migration 030): a job's rate_key, checked by the worker as the job starts
-- (batchq.stores.flow.FlowStore.start_keyed), one transaction per check.

-- name: key_rate_of_job
-- The claimed job's rate as enqueued, fenced by its claim's token (no row: a sweep took it back).
SELECT rate_limit, rate_period FROM batchq_job WHERE id = %(id)s AND claim_token = %(token)s;

-- name: key_rate_add
-- The key's row, made on its first check.
INSERT INTO batchq_rate_key (rate_key) VALUES (%(key)s) ON DUPLICATE KEY UPDATE rate_key = rate_key;

-- name: key_rate_lock
-- Lock the key's row (the checks of one key, from any host, take turns) and read the seconds
-- until its latest slot (NULL: none held back yet; negative: past), and how many jobs it has.
SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), next_slot_at) / 1e6 AS slot_in, slot_fill
FROM batchq_rate_key WHERE rate_key = %(key)s FOR UPDATE;

-- name: key_rate_prune
-- Starts older than the period count no more: gone, so the table holds about one window a key
-- (and one in the future, written by hand, would hold the key back until then).
DELETE FROM batchq_rate_key_start
WHERE rate_key = %(key)s
  AND (started_at < UTC_TIMESTAMP(6) - INTERVAL ROUND(%(period)s * 1000000) MICROSECOND
       OR started_at > UTC_TIMESTAMP(6));

-- name: key_rate_usage
-- The key's starts of the last period, and in how many seconds the oldest leaves the window.
SELECT COUNT(*) AS started,
       TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), MIN(started_at)) / 1e6 + %(period)s AS next_in
FROM batchq_rate_key_start
WHERE rate_key = %(key)s AND started_at >= UTC_TIMESTAMP(6) - INTERVAL ROUND(%(period)s * 1000000) MICROSECOND;

-- name: key_rate_start
-- The job starts now: its processing_at is its start, fenced by its claim's token.
UPDATE batchq_job SET processing_at = UTC_TIMESTAMP(6) WHERE id = %(id)s AND claim_token = %(token)s;

-- name: key_rate_record
-- That start, counted for its key.
INSERT INTO batchq_rate_key_start (rate_key, started_at)
SELECT %(key)s, processing_at FROM batchq_job WHERE id = %(id)s AND claim_token = %(token)s;

-- name: key_rate_next_slot
-- The key's latest slot, %(after)s seconds from now, with %(fill)s jobs given it.
UPDATE batchq_rate_key
SET next_slot_at = UTC_TIMESTAMP(6) + INTERVAL ROUND(%(after)s * 1000000) MICROSECOND, slot_fill = %(fill)s
WHERE rate_key = %(key)s;

-- name: key_rate_hold
-- A job over its key's rate goes back, uncounted and not run, due in %(wait)s seconds.
UPDATE batchq_job
SET status = 'scheduled', run_at = UTC_TIMESTAMP(6) + INTERVAL ROUND(%(wait)s * 1000000) MICROSECOND,
    processing_at = NULL, locked_by = NULL, claim_token = NULL, rate_held_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND claim_token = %(token)s;
