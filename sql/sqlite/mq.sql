-- The message-queue API (batchq.MessageQueue) on SQLite, by name (sqlite3 named paramstyle).
-- Times are UTC text from strftime('%Y-%m-%d %H:%M:%f', 'now'). A message is held by a
-- consumer while vt > now; it is visible (readable, cancellable) once vt <= now. Compared as
-- times (julianday), not as text: a vt written by hand in another form ('...T10:00:00Z') is
-- visible at its time, and one that is no time at all is visible now (a read sets it anew).
-- Writes run inside BEGIN IMMEDIATE: one writer at a time, so a read or pop is one
-- UPDATE/DELETE ... RETURNING and needs no row locks.

-- name: mq_queue_create
-- Register a queue; 0 rows when it exists already.
INSERT OR IGNORE INTO batchq_mq_meta (queue, created_at)
VALUES (:queue, strftime('%Y-%m-%d %H:%M:%f', 'now'));

-- name: mq_sent_shard_create
-- One shard of a queue's sent counter, created with the queue, with its send settings.
INSERT OR IGNORE INTO batchq_mq_sent (queue, shard, sent, max_length, overflow, durable)
VALUES (:queue, :shard, 0, :max_length, :overflow, :durable);

-- name: mq_queue_get
-- One queue's registration and send settings (shard 0's; every shard has the same).
SELECT m.queue AS queue_name, m.created_at, s.max_length, s.overflow, s.durable
FROM batchq_mq_meta AS m LEFT JOIN batchq_mq_sent AS s ON s.queue = m.queue AND s.shard = 0
WHERE m.queue = :queue;

-- name: mq_queue_list
-- Every queue, by name, with its send settings.
SELECT m.queue AS queue_name, m.created_at, s.max_length, s.overflow, s.durable
FROM batchq_mq_meta AS m LEFT JOIN batchq_mq_sent AS s ON s.queue = m.queue AND s.shard = 0
ORDER BY m.queue;

-- name: mq_queue_configure
-- Set a queue's bound on every shard row: the row locks wait out sends in flight and hold off
-- new ones until commit, so no send checks against the old bound after it.
UPDATE batchq_mq_sent SET max_length = :max_length, overflow = :overflow WHERE queue = :queue;

-- name: mq_queue_lock
-- A bounded queue's send lock: on the servers a row lock; SQLite's writer already has the database.
SELECT queue FROM batchq_mq_meta WHERE queue = :queue;

-- name: mq_queue_length
-- Messages in a queue, held or not: what a bound limits.
SELECT COUNT(*) AS length FROM batchq_message WHERE queue = :queue;

-- name: mq_overflow_victims
-- The oldest waiting messages (visible, or delayed and never read: no consumer holds them) of a
-- full drop_oldest queue, to archive and delete; a message another transaction has locked (being
-- read or deleted, or read inside an application's transaction) is passed over, not waited for.
SELECT id FROM batchq_message
WHERE queue = :queue AND (coalesce(julianday(vt) <= julianday('now'), 1) OR read_ct = 0)
ORDER BY id LIMIT :n;

-- name: mq_overflow_victims_any
-- When too few are waiting (consumers hold the rest): the oldest messages, held or not.
SELECT id FROM batchq_message WHERE queue = :queue ORDER BY id LIMIT :n;

-- name: mq_overflow_victims_wait
-- mq_overflow_victims when every message is locked by others (or the server lacks SKIP LOCKED): wait for them.
SELECT id FROM batchq_message WHERE queue = :queue ORDER BY id LIMIT :n;

-- name: mq_queue_drop_messages
-- drop_queue, 3/4: the queue's messages.
DELETE FROM batchq_message WHERE queue = :queue;

-- name: mq_queue_drop_archive
-- drop_queue, 4/4: its archive.
DELETE FROM batchq_message_archive WHERE queue = :queue;

-- name: mq_queue_drop_sent
-- drop_queue, 1/4: its sent counter (waits out sends in flight).
DELETE FROM batchq_mq_sent WHERE queue = :queue;

-- name: mq_queue_drop_meta
-- drop_queue, 2/4: the registration; 0 rows when there was no such queue.
DELETE FROM batchq_mq_meta WHERE queue = :queue;

-- name: mq_purge
-- Delete every message of a queue, held or not; the archive and the sent counter stay.
DELETE FROM batchq_message WHERE queue = :queue;

-- name: mq_send_settings
-- A send's first statement: lock one shard of the queue's sent counter and read the queue's
-- settings from it as they stand (a locking read sees the latest commit); no row: no such queue.
SELECT max_length, overflow, durable FROM batchq_mq_sent
WHERE queue = :queue AND shard = :shard;

-- name: mq_count_sent
-- Add to one shard of the sent counter, in the send's transaction, if the queue's type is still
-- the one the send validated against (schema_hash, 0: untyped); 0 rows: no such queue, or a new type.
UPDATE batchq_mq_sent SET sent = sent + :n WHERE queue = :queue AND shard = :shard AND schema_hash = :schema_hash;

-- name: mq_send
-- One message, visible after the delay, or at the absolute time `at` (Unix seconds; past: now).
INSERT INTO batchq_message (queue, vt, read_ct, enqueued_at, message, headers)
VALUES (:queue,
        CASE WHEN :at IS NULL THEN strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :delay))
             ELSE max(strftime('%Y-%m-%d %H:%M:%f', :at, 'unixepoch'), strftime('%Y-%m-%d %H:%M:%f', 'now')) END,
        0, strftime('%Y-%m-%d %H:%M:%f', 'now'), :message, :headers);

-- name: mq_read
-- Hide up to qty visible messages, oldest id first, matching the optional filter, and count
-- the read. The filter is JSON containment restricted to objects and scalars: every node of
-- the filter document must exist in the message at the same path with the same JSON type
-- (integer and real both count as a number), and every scalar must be equal.
UPDATE batchq_message
SET vt = strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :vt)), read_ct = read_ct + 1
WHERE id IN (
    SELECT m.id FROM batchq_message AS m INDEXED BY batchq_message_read
    WHERE m.queue = :queue AND coalesce(julianday(m.vt) <= julianday('now'), 1)
      AND (:where IS NULL OR NOT EXISTS (
          SELECT 1 FROM json_tree(:where) AS w
          WHERE (CASE WHEN w.type IN ('integer', 'real') THEN 'number' ELSE w.type END)
                IS NOT (CASE WHEN json_type(m.message, w.fullkey) IN ('integer', 'real') THEN 'number'
                             ELSE json_type(m.message, w.fullkey) END)
             OR (w.type NOT IN ('object', 'array')
                 AND json_extract(m.message, w.fullkey) IS NOT w.atom)))
    ORDER BY m.id
    LIMIT :qty
)
RETURNING id AS msg_id, read_ct, enqueued_at, vt, message, headers;

-- name: mq_pop
-- Delete up to qty visible messages, oldest id first, and return them.
DELETE FROM batchq_message
WHERE id IN (
    SELECT id FROM batchq_message INDEXED BY batchq_message_read
    WHERE queue = :queue AND coalesce(julianday(vt) <= julianday('now'), 1)
    ORDER BY id
    LIMIT :qty
)
RETURNING id AS msg_id, read_ct, enqueued_at, vt, message, headers;

-- name: mq_read_grouped
-- A FIFO read by group (the header x-pgmq-group, as text; none: one default group): hide the
-- head of up to qty groups, a group's head being its oldest message whether held or not, so a
-- group with a message in flight gives nothing. The read's write lock (BEGIN IMMEDIATE) keeps
-- other readers out until it commits. Headers that are no JSON read as no group.
UPDATE batchq_message
SET vt = strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :vt)), read_ct = read_ct + 1
WHERE id IN (
    SELECT m.id FROM batchq_message AS m INDEXED BY batchq_message_read
    WHERE m.queue = :queue AND coalesce(julianday(m.vt) <= julianday('now'), 1)
      AND m.id IN (
          SELECT MIN(id) FROM batchq_message
          WHERE queue = :queue
          GROUP BY CASE WHEN json_valid(headers)
                        THEN CAST(json_extract(headers, '$."x-pgmq-group"') AS TEXT) END)
    ORDER BY m.id
    LIMIT :qty
)
RETURNING id AS msg_id, read_ct, enqueued_at, vt, message, headers;

-- name: mq_message_get
-- One message as it stands.
SELECT id AS msg_id, read_ct, enqueued_at, vt, message, headers
FROM batchq_message WHERE id = :id AND queue = :queue;

-- name: mq_message_lock
-- Before archiving: BEGIN IMMEDIATE already holds the database, so this only reads;
-- with read_ct, only if nobody has read it since (the archiver's read is the receipt).
SELECT id FROM batchq_message WHERE id = :id AND queue = :queue
  AND (:read_ct IS NULL OR read_ct = :read_ct);

-- name: mq_archive_copy
-- Copy one message into the archive, stamped with the time and the reason (NULL: a consumer's).
INSERT INTO batchq_message_archive (id, queue, vt, read_ct, enqueued_at, archived_at, message, headers, reason)
SELECT id, queue, vt, read_ct, enqueued_at, strftime('%Y-%m-%d %H:%M:%f', 'now'), message, headers, :reason
FROM batchq_message WHERE id = :id AND queue = :queue;

-- name: mq_archive_read
-- A page of a queue's archive in id order, after after_id, with optional filters: archived at
-- or after since, before until (Unix seconds), with a reason.
SELECT id AS msg_id, read_ct, enqueued_at, vt, archived_at, message, headers, reason
FROM batchq_message_archive
WHERE queue = :queue AND id > :after_id
  AND (:since IS NULL OR archived_at >= strftime('%Y-%m-%d %H:%M:%f', :since, 'unixepoch'))
  AND (:until IS NULL OR archived_at < strftime('%Y-%m-%d %H:%M:%f', :until, 'unixepoch'))
  AND (:reason IS NULL OR reason = :reason)
ORDER BY id
LIMIT :limit;


-- name: mq_delete
-- Delete one message; 0 rows when it is gone, or, with read_ct, read by someone since.
DELETE FROM batchq_message WHERE id = :id AND queue = :queue
  AND (:read_ct IS NULL OR read_ct = :read_ct);

-- name: mq_set_vt
-- Make a message invisible until now + vt (0: visible at once), or until the absolute time `at`
-- (Unix seconds; past: now); read_ct fences as in mq_delete.
UPDATE batchq_message
SET vt = CASE WHEN :at IS NULL THEN strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :vt))
              ELSE max(strftime('%Y-%m-%d %H:%M:%f', :at, 'unixepoch'), strftime('%Y-%m-%d %H:%M:%f', 'now')) END
WHERE id = :id AND queue = :queue
  AND (:read_ct IS NULL OR read_ct = :read_ct);

-- name: mq_cancel
-- Delete a message no consumer holds: visible, or never read (only delayed).
DELETE FROM batchq_message
WHERE id = :id AND queue = :queue AND (coalesce(julianday(vt) <= julianday('now'), 1) OR read_ct = 0);

-- name: mq_hold
-- Seconds a message stays held by its consumer (<= 0: free), after a cancel was refused.
SELECT read_ct, coalesce((julianday(vt) - julianday('now')) * 86400.0, 0) AS held_seconds
FROM batchq_message WHERE id = :id AND queue = :queue;

-- name: mq_metrics
-- Length, visible length, ages in seconds and messages ever sent.
SELECT COUNT(*) AS queue_length,
       COALESCE(SUM(coalesce(julianday(vt) <= julianday('now'), 1)), 0) AS queue_visible_length,
       (julianday('now') - julianday(MIN(enqueued_at))) * 86400.0 AS oldest_msg_age_sec,
       (julianday('now') - julianday(MAX(enqueued_at))) * 86400.0 AS newest_msg_age_sec,
       (SELECT COALESCE(SUM(sent), 0) FROM batchq_mq_sent WHERE queue = :queue) AS total_messages,
       strftime('%Y-%m-%d %H:%M:%f', 'now') AS scrape_time
FROM batchq_message
WHERE queue = :queue;

-- name: mq_archive_prune
-- One batch of prune: delete up to `batch` archived messages older than older_than seconds
-- (of one queue, or of all), oldest first; its own short transaction.
DELETE FROM batchq_message_archive WHERE id IN (
    SELECT id FROM batchq_message_archive
    WHERE archived_at < strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -:older_than))
      AND (:queue IS NULL OR queue = :queue)
    ORDER BY archived_at
    LIMIT :batch
);

-- name: mq_queue_schema
-- A queue's type (payload_schema, NULL: untyped); the send's write lock already keeps it from changing.
SELECT payload_schema FROM batchq_mq_meta WHERE queue = :queue;

-- name: mq_queue_set_schema
-- alter_queue, 2/2: the queue's type.
UPDATE batchq_mq_meta SET payload_schema = :schema WHERE queue = :queue;

-- name: mq_sent_set_schema
-- alter_queue, 1/2: the type's hash on every counter shard, in alter_queue's write transaction.
UPDATE batchq_mq_sent SET schema_hash = :schema_hash WHERE queue = :queue;

-- name: mq_queue_messages
-- A page of a queue's messages, held or not, by id (alter_queue checks them against a new type).
SELECT id AS msg_id, message FROM batchq_message
WHERE queue = :queue AND id > :after ORDER BY id LIMIT :limit;

-- name: mq_archive_invalid
-- mq_archive_copy for a message that does not match its queue's type, with the reason.
INSERT INTO batchq_message_archive (id, queue, vt, read_ct, enqueued_at, archived_at, message, headers, reason)
SELECT id, queue, vt, read_ct, enqueued_at, strftime('%Y-%m-%d %H:%M:%f', 'now'), message, headers, :reason
FROM batchq_message WHERE id = :id AND queue = :queue;

-- name: mq_archive_popped
-- A popped message (deleted already) that does not match its queue's type, into the archive with the reason.
INSERT INTO batchq_message_archive (id, queue, vt, read_ct, enqueued_at, archived_at, message, headers, reason)
VALUES (:id, :queue, :vt, :read_ct, :enqueued_at, strftime('%Y-%m-%d %H:%M:%f', 'now'), :message, :headers, :reason);
