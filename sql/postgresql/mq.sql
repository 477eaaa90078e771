-- The message-queue API (batchq.MessageQueue) on PostgreSQL, by name (psycopg paramstyle).
-- Times are timestamptz from clock_timestamp(): the server's clock at the statement, even
-- inside a long application transaction. A message is held by a consumer while vt > now;
-- it is visible (readable, cancellable) once vt <= now.

-- name: mq_queue_create
-- Register a queue; 0 rows when it exists already.
INSERT INTO batchq_mq_meta (queue, created_at) VALUES (%(queue)s, clock_timestamp())
ON CONFLICT (queue) DO NOTHING;

-- name: mq_sent_shard_create
-- One shard of a queue's sent counter, created with the queue.
INSERT INTO batchq_mq_sent (queue, shard, sent) VALUES (%(queue)s, %(shard)s, 0)
ON CONFLICT (queue, shard) DO NOTHING;

-- name: mq_queue_get
-- One queue's registration.
SELECT queue AS queue_name, created_at FROM batchq_mq_meta WHERE queue = %(queue)s;

-- name: mq_queue_list
-- Every queue, by name.
SELECT queue AS queue_name, created_at FROM batchq_mq_meta ORDER BY queue;

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

-- name: mq_count_sent
-- Add to one shard of the sent counter, in the send's transaction, if the queue's type is still
-- the one the send validated against (schema_hash, 0: untyped); 0 rows: no such queue, or a new type.
UPDATE batchq_mq_sent SET sent = sent + %(n)s WHERE queue = %(queue)s AND shard = %(shard)s AND schema_hash = %(schema_hash)s;

-- name: mq_send
-- One message, visible after the delay.
INSERT INTO batchq_message (queue, vt, read_ct, enqueued_at, message, headers)
VALUES (%(queue)s, clock_timestamp() + %(delay)s::float8 * interval '1 second', 0, clock_timestamp(),
        %(message)s::jsonb, %(headers)s::jsonb)
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
UPDATE batchq_message AS m
SET vt = clock_timestamp() + %(vt)s::float8 * interval '1 second', read_ct = m.read_ct + 1
FROM picked
WHERE m.id = picked.id
RETURNING m.id AS msg_id, m.read_ct, m.enqueued_at, m.vt, m.message::text AS message, m.headers::text AS headers;

-- name: mq_pop
-- Delete the oldest visible message and return it.
WITH picked AS (
    SELECT id FROM batchq_message
    WHERE queue = %(queue)s AND vt <= clock_timestamp()
    ORDER BY id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
DELETE FROM batchq_message AS m
USING picked
WHERE m.id = picked.id
RETURNING m.id AS msg_id, m.read_ct, m.enqueued_at, m.vt, m.message::text AS message, m.headers::text AS headers;

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
-- Copy one message into the archive, stamped with the time it was archived.
INSERT INTO batchq_message_archive (id, queue, vt, read_ct, enqueued_at, archived_at, message, headers)
SELECT id, queue, vt, read_ct, enqueued_at, clock_timestamp(), message, headers
FROM batchq_message WHERE id = %(id)s AND queue = %(queue)s;

-- name: mq_delete
-- Delete one message; 0 rows when it is gone, or, with read_ct, read by someone since.
DELETE FROM batchq_message WHERE id = %(id)s AND queue = %(queue)s
  AND (%(read_ct)s::integer IS NULL OR read_ct = %(read_ct)s::integer);

-- name: mq_set_vt
-- Make a message invisible until now + vt (0: visible at once); read_ct fences as in mq_delete.
UPDATE batchq_message SET vt = clock_timestamp() + %(vt)s::float8 * interval '1 second'
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
-- Length, visible length, ages in seconds and messages ever sent, on the server's clock.
SELECT COUNT(*) AS queue_length,
       COUNT(*) FILTER (WHERE vt <= clock_timestamp()) AS queue_visible_length,
       EXTRACT(EPOCH FROM clock_timestamp() - MIN(enqueued_at))::float8 AS oldest_msg_age_sec,
       EXTRACT(EPOCH FROM clock_timestamp() - MAX(enqueued_at))::float8 AS newest_msg_age_sec,
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
