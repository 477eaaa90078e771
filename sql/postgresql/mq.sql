-- The message-queue API (batchq.MessageQueue) on PostgreSQL, by name (psycopg paramstyle).
-- Times are timestamptz from clock_timestamp(): the server's clock at the statement, even
-- inside a long application transaction. A message is held by a consumer while vt > now;
-- it is visible (readable, cancellable) once vt <= now.

-- name: mq_queue_create
-- Register a queue; 0 rows when it exists already.
INSERT INTO batchq_mq_meta (queue, created_at) VALUES (%(queue)s, clock_timestamp())
ON CONFLICT (queue) DO NOTHING;

-- name: mq_sent_shard_create
-- One shard of a queue's sent counter, created with the queue, with its send settings.
INSERT INTO batchq_mq_sent (queue, shard, sent, max_length, overflow, durable)
VALUES (%(queue)s, %(shard)s, 0, %(max_length)s, %(overflow)s, %(durable)s)
ON CONFLICT (queue, shard) DO NOTHING;

-- name: mq_queue_get
-- One queue's registration and send settings (shard 0's; every shard has the same).
SELECT m.queue AS queue_name, m.created_at, s.max_length, s.overflow, s.durable
FROM batchq_mq_meta AS m LEFT JOIN batchq_mq_sent AS s ON s.queue = m.queue AND s.shard = 0
WHERE m.queue = %(queue)s;

-- name: mq_queue_list
-- Every queue, by name, with its send settings.
SELECT m.queue AS queue_name, m.created_at, s.max_length, s.overflow, s.durable
FROM batchq_mq_meta AS m LEFT JOIN batchq_mq_sent AS s ON s.queue = m.queue AND s.shard = 0
ORDER BY m.queue;

-- name: mq_queue_configure
-- Set a queue's bound on every shard row: the row locks wait out sends in flight and hold off
-- new ones until commit, so no send checks against the old bound after it.
UPDATE batchq_mq_sent SET max_length = %(max_length)s, overflow = %(overflow)s WHERE queue = %(queue)s;

-- name: mq_queue_lock
-- A bounded queue's send lock: bounded sends to one queue take turns on its registration row.
SELECT queue FROM batchq_mq_meta WHERE queue = %(queue)s FOR UPDATE;

-- name: mq_queue_length
-- Messages in a queue, held or not: what a bound limits.
SELECT COUNT(*) AS length FROM batchq_message WHERE queue = %(queue)s;

-- name: mq_overflow_victims
-- The oldest waiting messages (visible, or delayed and never read: no consumer holds them) of a
-- full drop_oldest queue, to archive and delete; a message another transaction has locked (being
-- read or deleted, or read inside an application's transaction) is passed over, not waited for.
SELECT id FROM batchq_message
WHERE queue = %(queue)s AND (vt <= clock_timestamp() OR read_ct = 0)
ORDER BY id LIMIT %(n)s FOR UPDATE SKIP LOCKED;

-- name: mq_overflow_victims_any
-- When too few are waiting (consumers hold the rest): the oldest messages, held or not.
SELECT id FROM batchq_message WHERE queue = %(queue)s ORDER BY id LIMIT %(n)s FOR UPDATE SKIP LOCKED;

-- name: mq_overflow_victims_wait
-- mq_overflow_victims when every message is locked by others: wait for them.
SELECT id FROM batchq_message WHERE queue = %(queue)s ORDER BY id LIMIT %(n)s FOR UPDATE;

-- name: mq_queue_drop_messages
-- drop_queue, 3/4: the queue's messages.
DELETE FROM batchq_message WHERE queue = %(queue)s;

-- name: mq_queue_drop_archive
-- drop_queue, 4/4: its archive.
DELETE FROM batchq_message_archive WHERE queue = %(queue)s;

-- name: mq_queue_drop_sent
-- drop_queue, 1/4: its sent counter (waits out sends in flight).
DELETE FROM batchq_mq_sent WHERE queue = %(queue)s;

-- name: mq_queue_drop_meta
-- drop_queue, 2/4: the registration; 0 rows when there was no such queue.
DELETE FROM batchq_mq_meta WHERE queue = %(queue)s;

-- name: mq_purge
-- Delete every message of a queue, held or not; the archive and the sent counter stay.
DELETE FROM batchq_message WHERE queue = %(queue)s;

-- name: mq_send_settings
-- A send's first statement: lock one shard of the queue's sent counter and read the queue's
-- settings from it as they stand (a locking read sees the latest commit); no row: no such queue.
SELECT max_length, overflow, durable FROM batchq_mq_sent
WHERE queue = %(queue)s AND shard = %(shard)s FOR UPDATE;

-- name: mq_count_sent
-- Add to one shard of the sent counter, in the send's transaction, if the queue's type is still
-- the one the send validated against (schema_hash, 0: untyped); 0 rows: no such queue, or a new type.
UPDATE batchq_mq_sent SET sent = sent + %(n)s WHERE queue = %(queue)s AND shard = %(shard)s AND schema_hash = %(schema_hash)s;

-- name: mq_send
-- One message, visible after the delay, or at the absolute time `at` (Unix seconds; past: now).
INSERT INTO batchq_message (queue, vt, read_ct, enqueued_at, message, headers)
VALUES (%(queue)s,
        CASE WHEN %(at)s::float8 IS NULL THEN clock_timestamp() + %(delay)s::float8 * interval '1 second'
             ELSE GREATEST(to_timestamp(%(at)s::float8), clock_timestamp()) END,
        0, clock_timestamp(), %(message)s::jsonb, %(headers)s::jsonb)
RETURNING id;

-- name: mq_send_async_commit
-- A non-durable send in batchq's own transaction: its commit need not wait for the WAL flush
-- (the sent counter's row is logged; the messages, in the UNLOGGED table, are not). A crash may
-- lose its last counts, as it loses the queue's messages.
SET LOCAL synchronous_commit = off;

-- name: mq_send_unlogged
-- mq_send for a non-durable queue: into the UNLOGGED table (no WAL; emptied by a crash).
INSERT INTO batchq_message_unlogged (queue, vt, read_ct, enqueued_at, message, headers)
VALUES (%(queue)s,
        CASE WHEN %(at)s::float8 IS NULL THEN clock_timestamp() + %(delay)s::float8 * interval '1 second'
             ELSE GREATEST(to_timestamp(%(at)s::float8), clock_timestamp()) END,
        0, clock_timestamp(), %(message)s::jsonb, %(headers)s::jsonb)
RETURNING id;

-- name: mq_read
-- Hide up to qty visible messages, oldest id first, matching the optional containment
-- filter, and count the read. The filter is in the locking SELECT's WHERE, below LIMIT:
-- rows are filtered before LockRows, so the statement locks only the rows it returns.
WITH picked AS (
    SELECT id FROM batchq_message
    WHERE queue = %(queue)s AND vt <= clock_timestamp()
      AND (%(where)s::jsonb IS NULL OR message @> %(where)s::jsonb)
    ORDER BY id
    LIMIT %(qty)s
    FOR UPDATE SKIP LOCKED
)
{{read_hide_picked}}

-- name: mq_pop
-- Delete up to qty visible messages, oldest id first, and return them.
WITH picked AS (
    SELECT id FROM batchq_message
    WHERE queue = %(queue)s AND vt <= clock_timestamp()
    ORDER BY id
    LIMIT %(qty)s
    FOR UPDATE SKIP LOCKED
)
DELETE FROM batchq_message AS m
USING picked
WHERE m.id = picked.id
RETURNING m.id AS msg_id, m.read_ct, m.enqueued_at, m.vt, m.message::text AS message, m.headers::text AS headers;

-- name: mq_read_grouped
-- A FIFO read by group (the header x-pgmq-group; none: one default group): hide the head of up
-- to qty groups, a group's head being its oldest message whether held or not, so a group with a
-- message in flight (or a message a concurrent reader has locked: SKIP LOCKED) gives nothing.
-- heads is the statement's snapshot; FOR UPDATE locks only m, and re-checks vt on a row another
-- reader changed meanwhile.
WITH heads AS (
    SELECT MIN(id) AS id FROM batchq_message
    WHERE queue = %(queue)s
    GROUP BY headers->>'x-pgmq-group'
), picked AS (
    SELECT m.id FROM batchq_message AS m
    WHERE m.queue = %(queue)s AND m.id IN (SELECT id FROM heads) AND m.vt <= clock_timestamp()
    ORDER BY m.id
    LIMIT %(qty)s
    FOR UPDATE SKIP LOCKED
)
{{read_hide_picked}}

-- name: mq_message_get
-- One message as it stands.
SELECT id AS msg_id, read_ct, enqueued_at, vt, message::text AS message, headers::text AS headers
FROM batchq_message WHERE id = %(id)s AND queue = %(queue)s;

-- name: mq_message_lock
-- Lock one message before moving it to the archive, so two archivers cannot both copy it;
-- with read_ct, only if nobody has read it since (the archiver's read is the receipt).
SELECT id FROM batchq_message WHERE id = %(id)s AND queue = %(queue)s
  AND (%(read_ct)s::integer IS NULL OR read_ct = %(read_ct)s::integer) FOR UPDATE;

-- name: mq_archive_copy
-- Copy one message into the archive, stamped with the time and the reason (NULL: a consumer's).
INSERT INTO batchq_message_archive (id, queue, vt, read_ct, enqueued_at, archived_at, message, headers, reason)
SELECT id, queue, vt, read_ct, enqueued_at, clock_timestamp(), message, headers, %(reason)s
FROM batchq_message WHERE id = %(id)s AND queue = %(queue)s;

-- name: mq_archive_read
-- A page of a queue's archive in id order, after after_id, with optional filters: archived at
-- or after since, before until (Unix seconds), with a reason.
SELECT id AS msg_id, read_ct, enqueued_at, vt, archived_at, message::text AS message,
       headers::text AS headers, reason
FROM batchq_message_archive
WHERE queue = %(queue)s AND id > %(after_id)s
  AND (%(since)s::float8 IS NULL OR archived_at >= to_timestamp(%(since)s::float8))
  AND (%(until)s::float8 IS NULL OR archived_at < to_timestamp(%(until)s::float8))
  AND (%(reason)s::text IS NULL OR reason = %(reason)s::text)
ORDER BY id
LIMIT %(limit)s;

-- name: mq_archive_prune
-- One batch of prune: delete up to `batch` archived messages older than older_than seconds
-- (of one queue, or of all), oldest first; its own short transaction.
DELETE FROM batchq_message_archive WHERE id = ANY(ARRAY(
    SELECT id FROM batchq_message_archive
    WHERE archived_at < clock_timestamp() - %(older_than)s::float8 * interval '1 second'
      AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
    ORDER BY archived_at
    LIMIT %(batch)s
));

-- name: mq_delete
-- Delete one message; 0 rows when it is gone, or, with read_ct, read by someone since.
DELETE FROM batchq_message WHERE id = %(id)s AND queue = %(queue)s
  AND (%(read_ct)s::integer IS NULL OR read_ct = %(read_ct)s::integer);

-- name: mq_set_vt
-- Make a message invisible until now + vt (0: visible at once), or until the absolute time `at`
-- (Unix seconds; past: now); read_ct fences as in mq_delete.
UPDATE batchq_message
SET vt = CASE WHEN %(at)s::float8 IS NULL THEN clock_timestamp() + %(vt)s::float8 * interval '1 second'
              ELSE GREATEST(to_timestamp(%(at)s::float8), clock_timestamp()) END
WHERE id = %(id)s AND queue = %(queue)s
  AND (%(read_ct)s::integer IS NULL OR read_ct = %(read_ct)s::integer);

-- name: mq_cancel
-- Delete a message no consumer holds: visible, or never read (only delayed).
DELETE FROM batchq_message
WHERE id = %(id)s AND queue = %(queue)s AND (vt <= clock_timestamp() OR read_ct = 0);

-- name: mq_hold
-- Seconds a message stays held by its consumer (<= 0: free), after a cancel was refused.
SELECT read_ct, EXTRACT(EPOCH FROM vt - clock_timestamp())::float8 AS held_seconds
FROM batchq_message WHERE id = %(id)s AND queue = %(queue)s;

-- name: mq_metrics
-- Length, visible length, ages in seconds and messages ever sent, on the server's clock. An
-- enqueued_at written by hand as +-infinity cannot be subtracted from: its age is NULL.
SELECT COUNT(*) AS queue_length,
       COUNT(*) FILTER (WHERE vt <= clock_timestamp()) AS queue_visible_length,
       CASE WHEN isfinite(MIN(enqueued_at))
            THEN EXTRACT(EPOCH FROM clock_timestamp() - MIN(enqueued_at))::float8 END AS oldest_msg_age_sec,
       CASE WHEN isfinite(MAX(enqueued_at))
            THEN EXTRACT(EPOCH FROM clock_timestamp() - MAX(enqueued_at))::float8 END AS newest_msg_age_sec,
       (SELECT COALESCE(SUM(sent), 0) FROM batchq_mq_sent WHERE queue = %(queue)s)::bigint AS total_messages,
       clock_timestamp() AS scrape_time
FROM batchq_message
WHERE queue = %(queue)s;

-- name: mq_queue_schema
-- A queue's type (payload_schema, NULL: untyped); a share lock, so a send that saw a new type reads its committed text.
SELECT payload_schema FROM batchq_mq_meta WHERE queue = %(queue)s FOR SHARE;

-- name: mq_queue_set_schema
-- alter_queue, 2/2: the queue's type.
UPDATE batchq_mq_meta SET payload_schema = %(schema)s WHERE queue = %(queue)s;

-- name: mq_sent_set_schema
-- alter_queue, 1/2: the type's hash on every counter shard; the row locks wait out sends in flight and hold new ones.
UPDATE batchq_mq_sent SET schema_hash = %(schema_hash)s WHERE queue = %(queue)s;

-- name: mq_queue_messages
-- A page of a queue's messages, held or not, by id (alter_queue checks them against a new type).
SELECT id AS msg_id, message::text AS message FROM batchq_message
WHERE queue = %(queue)s AND id > %(after)s ORDER BY id LIMIT %(limit)s;

-- name: mq_archive_invalid
-- mq_archive_copy for a message that does not match its queue's type, with the reason.
INSERT INTO batchq_message_archive (id, queue, vt, read_ct, enqueued_at, archived_at, message, headers, reason)
SELECT id, queue, vt, read_ct, enqueued_at, clock_timestamp(), message, headers, %(reason)s
FROM batchq_message WHERE id = %(id)s AND queue = %(queue)s;

-- name: mq_archive_popped
-- A popped message (deleted already) that does not match its queue's type, into the archive with the reason.
-- Times come as UTC text (YYYY-MM-DD HH:MM:SS.ffffff), the same in every dialect.
INSERT INTO batchq_message_archive (id, queue, vt, read_ct, enqueued_at, archived_at, message, headers, reason)
VALUES (%(id)s, %(queue)s, %(vt)s::timestamp AT TIME ZONE 'UTC', %(read_ct)s,
        %(enqueued_at)s::timestamp AT TIME ZONE 'UTC', clock_timestamp(), %(message)s::jsonb, %(headers)s::jsonb,
        %(reason)s);

-- part: read_hide_picked
-- Hide the picked messages for vt seconds and return them (read_ct counts this read).
UPDATE batchq_message AS m
SET vt = clock_timestamp() + %(vt)s::float8 * interval '1 second', read_ct = m.read_ct + 1
FROM picked
WHERE m.id = picked.id
RETURNING m.id AS msg_id, m.read_ct, m.enqueued_at, m.vt, m.message::text AS message, m.headers::text AS headers;
