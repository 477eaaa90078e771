-- The message-queue API (batchq.MessageQueue) on MySQL/MariaDB, by name (PyMySQL paramstyle).
-- Times are UTC DATETIME(6) against UTC_TIMESTAMP(6). A message is held by a consumer while
-- vt > now; it is visible (readable, cancellable) once vt <= now.
-- MySQL has no UPDATE ... RETURNING, so a read is two statements in one short transaction:
-- mq_read (lock) then mq_read_mark; a pop is mq_pop (lock) then mq_pop_mark. The other
-- dialects do each in one statement and have no *_mark queries. Servers without SKIP LOCKED
-- lock with the *_no_skip variants instead.

-- name: mq_queue_create
-- Register a queue; 0 rows when it exists already.
INSERT IGNORE INTO batchq_mq_meta (queue, created_at) VALUES (%(queue)s, UTC_TIMESTAMP(6));

-- name: mq_sent_shard_create
-- One shard of a queue's sent counter, created with the queue, with its send settings.
INSERT IGNORE INTO batchq_mq_sent (queue, shard, sent, max_length, overflow, durable)
VALUES (%(queue)s, %(shard)s, 0, %(max_length)s, %(overflow)s, %(durable)s);

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
SELECT id FROM batchq_message FORCE INDEX (PRIMARY)
WHERE queue = %(queue)s AND (vt <= UTC_TIMESTAMP(6) OR read_ct = 0)
ORDER BY id LIMIT %(n)s FOR UPDATE SKIP LOCKED;

-- name: mq_overflow_victims_any
-- When too few are waiting (consumers hold the rest): the oldest messages, held or not.
SELECT id FROM batchq_message FORCE INDEX (PRIMARY) WHERE queue = %(queue)s ORDER BY id LIMIT %(n)s FOR UPDATE SKIP LOCKED;

-- name: mq_overflow_victims_wait
-- mq_overflow_victims when every message is locked by others (or the server lacks SKIP LOCKED): wait for them.
SELECT id FROM batchq_message FORCE INDEX (PRIMARY) WHERE queue = %(queue)s ORDER BY id LIMIT %(n)s FOR UPDATE;

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
        CASE WHEN %(at)s IS NULL THEN UTC_TIMESTAMP(6) + INTERVAL ROUND(%(delay)s * 1000000) MICROSECOND
             ELSE GREATEST(TIMESTAMP '1970-01-01 00:00:00' + INTERVAL ROUND(%(at)s * 1000000) MICROSECOND, UTC_TIMESTAMP(6)) END,
        0, UTC_TIMESTAMP(6), %(message)s, %(headers)s);

-- name: mq_read
-- Lock up to qty visible messages, oldest id first, that match the optional JSON filter.
-- The filter is in this WHERE, and the walk of the clustered (queue, id) key is in id order,
-- so LIMIT stops the scan: under READ COMMITTED InnoDB releases at once any row that fails
-- the WHERE, so the transaction keeps locks only on the rows it returns. FORCE INDEX: a
-- filesort plan would lock every visible row before the LIMIT. Returns the values
-- mq_read_mark will write. JSON_CONTAINS also finds a filter's value inside an array of the
-- message ({"k": 1} in {"k": [1, 2]}), which PostgreSQL's @> and SQLite's filter do not: so no
-- node of the filter (where_paths: the path of each, the root first) may be an array in the
-- message.
SELECT id AS msg_id, read_ct + 1 AS read_ct, enqueued_at,
       UTC_TIMESTAMP(6) + INTERVAL ROUND(%(vt)s * 1000000) MICROSECOND AS vt, message, headers
FROM batchq_message FORCE INDEX (PRIMARY)
WHERE queue = %(queue)s AND vt <= UTC_TIMESTAMP(6)
  AND (%(where)s IS NULL OR (JSON_CONTAINS(message, %(where)s) AND NOT EXISTS (
      SELECT 1 FROM JSON_TABLE(%(where_paths)s, '$[*]' COLUMNS (path VARCHAR(4096) PATH '$')) AS f
      WHERE JSON_TYPE(JSON_EXTRACT(message, f.path)) = 'ARRAY')))
ORDER BY id
LIMIT %(qty)s
FOR UPDATE SKIP LOCKED;

-- name: mq_read_no_skip
-- mq_read for servers without SKIP LOCKED (MySQL < 8.0.1, MariaDB < 10.6): correct, but readers wait for each other.
-- Those servers lack JSON_TABLE too, so here a filter's scalar also matches inside an array.
SELECT id AS msg_id, read_ct + 1 AS read_ct, enqueued_at,
       UTC_TIMESTAMP(6) + INTERVAL ROUND(%(vt)s * 1000000) MICROSECOND AS vt, message, headers
FROM batchq_message FORCE INDEX (PRIMARY)
WHERE queue = %(queue)s AND vt <= UTC_TIMESTAMP(6)
  AND (%(where)s IS NULL OR JSON_CONTAINS(message, %(where)s))
ORDER BY id
LIMIT %(qty)s
FOR UPDATE;

-- name: mq_read_mark
-- Second half of a read: hide the locked messages until vt and count the read.
UPDATE batchq_message SET vt = %(until)s, read_ct = read_ct + 1 WHERE queue = %(queue)s AND id IN %(ids)s;

-- name: mq_pop
-- Lock up to qty visible messages, oldest id first, for deletion (see mq_read).
SELECT id AS msg_id, read_ct, enqueued_at, vt, message, headers
FROM batchq_message FORCE INDEX (PRIMARY)
WHERE queue = %(queue)s AND vt <= UTC_TIMESTAMP(6)
ORDER BY id
LIMIT %(qty)s
FOR UPDATE SKIP LOCKED;

-- name: mq_pop_no_skip
-- mq_pop for servers without SKIP LOCKED: correct, but poppers wait for each other.
SELECT id AS msg_id, read_ct, enqueued_at, vt, message, headers
FROM batchq_message FORCE INDEX (PRIMARY)
WHERE queue = %(queue)s AND vt <= UTC_TIMESTAMP(6)
ORDER BY id
LIMIT %(qty)s
FOR UPDATE;

-- name: mq_pop_mark
-- Second half of a pop: delete the locked messages.
DELETE FROM batchq_message WHERE queue = %(queue)s AND id IN %(ids)s;

-- name: mq_read_grouped
-- A FIFO read by group (the header x-pgmq-group; none, or JSON null: one default group): lock the
-- head of up to qty groups for mq_read_mark, a group's head being its oldest message whether held
-- or not, so a group with a message in flight (or a message a concurrent reader has locked: SKIP
-- LOCKED) gives nothing. The heads come from a plain read of the latest commits (READ COMMITTED;
-- a subquery of a locking read locks nothing); the locking read of m then sees each row's latest
-- commit, so a head another reader has just hidden fails vt <= now.
{{read_grouped_heads}}
FOR UPDATE SKIP LOCKED;

-- name: mq_read_grouped_no_skip
-- mq_read_grouped for servers without SKIP LOCKED: a reader waits for a head another holds locked
-- and then re-checks its vt.
{{read_grouped_heads}}
FOR UPDATE;

-- name: mq_message_get
-- One message as it stands.
SELECT id AS msg_id, read_ct, enqueued_at, vt, message, headers
FROM batchq_message WHERE id = %(id)s AND queue = %(queue)s;

-- name: mq_message_lock
-- Lock one message before moving it to the archive, so two archivers cannot both copy it;
-- with read_ct, only if nobody has read it since (the archiver's read is the receipt).
SELECT id FROM batchq_message WHERE id = %(id)s AND queue = %(queue)s
  AND (%(read_ct)s IS NULL OR read_ct = %(read_ct)s) FOR UPDATE;

-- name: mq_archive_copy
-- Copy one message into the archive, stamped with the time and the reason (NULL: a consumer's).
INSERT INTO batchq_message_archive (id, queue, vt, read_ct, enqueued_at, archived_at, message, headers, reason)
SELECT id, queue, vt, read_ct, enqueued_at, UTC_TIMESTAMP(6), message, headers, %(reason)s
FROM batchq_message WHERE id = %(id)s AND queue = %(queue)s;

-- name: mq_archive_read
-- A page of a queue's archive in id order, after after_id, with optional filters: archived at
-- or after since, before until (Unix seconds), with a reason.
SELECT id AS msg_id, read_ct, enqueued_at, vt, archived_at, message, headers, reason
FROM batchq_message_archive
WHERE queue = %(queue)s AND id > %(after_id)s
  AND (%(since)s IS NULL OR archived_at >= TIMESTAMP '1970-01-01 00:00:00' + INTERVAL ROUND(%(since)s * 1000000) MICROSECOND)
  AND (%(until)s IS NULL OR archived_at < TIMESTAMP '1970-01-01 00:00:00' + INTERVAL ROUND(%(until)s * 1000000) MICROSECOND)
  AND (%(reason)s IS NULL OR reason = %(reason)s)
ORDER BY id
LIMIT %(limit)s;


-- name: mq_delete
-- Delete one message; 0 rows when it is gone, or, with read_ct, read by someone since.
DELETE FROM batchq_message WHERE id = %(id)s AND queue = %(queue)s
  AND (%(read_ct)s IS NULL OR read_ct = %(read_ct)s);

-- name: mq_set_vt
-- Make a message invisible until now + vt (0: visible at once), or until the absolute time `at`
-- (Unix seconds; past: now); read_ct fences as in mq_delete.
UPDATE batchq_message
SET vt = CASE WHEN %(at)s IS NULL THEN UTC_TIMESTAMP(6) + INTERVAL ROUND(%(vt)s * 1000000) MICROSECOND
              ELSE GREATEST(TIMESTAMP '1970-01-01 00:00:00' + INTERVAL ROUND(%(at)s * 1000000) MICROSECOND, UTC_TIMESTAMP(6)) END
WHERE id = %(id)s AND queue = %(queue)s
  AND (%(read_ct)s IS NULL OR read_ct = %(read_ct)s);

-- name: mq_cancel
-- Delete a message no consumer holds: visible, or never read (only delayed).
DELETE FROM batchq_message
WHERE id = %(id)s AND queue = %(queue)s AND (vt <= UTC_TIMESTAMP(6) OR read_ct = 0);

-- name: mq_hold
-- Seconds a message stays held by its consumer (<= 0: free), after a cancel was refused.
SELECT read_ct, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), vt) / 1e6 AS held_seconds
FROM batchq_message WHERE id = %(id)s AND queue = %(queue)s;

-- name: mq_metrics
-- Length, visible length, ages in seconds and messages ever sent, on the server's clock.
SELECT COUNT(*) AS queue_length,
       COALESCE(SUM(vt <= UTC_TIMESTAMP(6)), 0) AS queue_visible_length,
       TIMESTAMPDIFF(MICROSECOND, MIN(enqueued_at), UTC_TIMESTAMP(6)) / 1e6 AS oldest_msg_age_sec,
       TIMESTAMPDIFF(MICROSECOND, MAX(enqueued_at), UTC_TIMESTAMP(6)) / 1e6 AS newest_msg_age_sec,
       (SELECT COALESCE(SUM(sent), 0) FROM batchq_mq_sent WHERE queue = %(queue)s) AS total_messages,
       UTC_TIMESTAMP(6) AS scrape_time
FROM batchq_message
WHERE queue = %(queue)s;

-- name: mq_archive_prune
-- One batch of prune: delete up to `batch` archived messages older than older_than seconds
-- (of one queue, or of all), oldest first; its own short transaction.
DELETE FROM batchq_message_archive
WHERE archived_at < UTC_TIMESTAMP(6) - INTERVAL ROUND(%(older_than)s * 1000000) MICROSECOND
  AND (%(queue)s IS NULL OR queue = %(queue)s)
ORDER BY archived_at
LIMIT %(batch)s;

-- name: mq_queue_schema
-- A queue's type (payload_schema, NULL: untyped); a share lock, so a send that saw a new type reads its committed text.
SELECT payload_schema FROM batchq_mq_meta WHERE queue = %(queue)s LOCK IN SHARE MODE;

-- name: mq_queue_set_schema
-- alter_queue, 2/2: the queue's type.
UPDATE batchq_mq_meta SET payload_schema = %(schema)s WHERE queue = %(queue)s;

-- name: mq_sent_set_schema
-- alter_queue, 1/2: the type's hash on every counter shard; the row locks wait out sends in flight and hold new ones.
UPDATE batchq_mq_sent SET schema_hash = %(schema_hash)s WHERE queue = %(queue)s;

-- name: mq_queue_messages
-- A page of a queue's messages, held or not, by id (alter_queue checks them against a new type).
SELECT id AS msg_id, message FROM batchq_message
WHERE queue = %(queue)s AND id > %(after)s ORDER BY id LIMIT %(limit)s;

-- name: mq_archive_invalid
-- mq_archive_copy for a message that does not match its queue's type, with the reason.
INSERT INTO batchq_message_archive (id, queue, vt, read_ct, enqueued_at, archived_at, message, headers, reason)
SELECT id, queue, vt, read_ct, enqueued_at, UTC_TIMESTAMP(6), message, headers, %(reason)s
FROM batchq_message WHERE id = %(id)s AND queue = %(queue)s;

-- name: mq_archive_popped
-- A popped message (deleted already) that does not match its queue's type, into the archive with the reason.
INSERT INTO batchq_message_archive (id, queue, vt, read_ct, enqueued_at, archived_at, message, headers, reason)
VALUES (%(id)s, %(queue)s, %(vt)s, %(read_ct)s, %(enqueued_at)s, UTC_TIMESTAMP(6), %(message)s, %(headers)s, %(reason)s);

-- part: read_grouped_heads
-- The heads of up to qty groups whose head is visible (the locking clause follows).
SELECT id AS msg_id, read_ct + 1 AS read_ct, enqueued_at,
       UTC_TIMESTAMP(6) + INTERVAL ROUND(%(vt)s * 1000000) MICROSECOND AS vt, message, headers
FROM batchq_message FORCE INDEX (PRIMARY)
WHERE queue = %(queue)s AND vt <= UTC_TIMESTAMP(6)
  AND id IN (
      SELECT head FROM (
          SELECT MIN(id) AS head FROM batchq_message
          WHERE queue = %(queue)s
          GROUP BY CASE WHEN JSON_TYPE(JSON_EXTRACT(headers, '$."x-pgmq-group"')) <> 'NULL'
                        THEN JSON_UNQUOTE(JSON_EXTRACT(headers, '$."x-pgmq-group"')) END
      ) AS heads)
ORDER BY id
LIMIT %(qty)s
