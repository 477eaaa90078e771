-- The operator's views of the message queues (`batchq mq list/stats/peek`, `stats`, `metrics`,
-- the dashboard): plain SELECTs in autocommit, ages on the server's clock (clock_timestamp()).
-- batchq_message includes its UNLOGGED child (non-durable queues). A time written by hand as
-- infinity cannot be subtracted from: isfinite() keeps such rows from failing the view.

-- name: mqview_queues
-- Every queue (or one: :queue), with its settings, its type and the messages ever sent.
SELECT m.queue AS queue_name, m.created_at, m.payload_schema, s.max_length, s.overflow, s.durable,
       (SELECT COALESCE(SUM(t.sent), 0) FROM batchq_mq_sent AS t WHERE t.queue = m.queue)::bigint AS sent
FROM batchq_mq_meta AS m LEFT JOIN batchq_mq_sent AS s ON s.queue = m.queue AND s.shard = 0
WHERE %(queue)s::text IS NULL OR m.queue = %(queue)s::text
ORDER BY m.queue;

-- name: mqview_messages
-- Per queue: messages, visible now, delayed (never read, vt ahead), held (read, vt ahead) and
-- the oldest message's age in seconds; redelivered: read more than once (a consumer's hold ran out).
SELECT queue, COUNT(*) AS length,
       COUNT(*) FILTER (WHERE vt <= clock_timestamp()) AS n_visible,
       COUNT(*) FILTER (WHERE vt > clock_timestamp() AND read_ct = 0) AS n_delayed,
       COUNT(*) FILTER (WHERE vt > clock_timestamp() AND read_ct <> 0) AS n_held,
       COUNT(*) FILTER (WHERE read_ct > 1) AS redelivered,
       CASE WHEN isfinite(MIN(enqueued_at))
            THEN EXTRACT(EPOCH FROM clock_timestamp() - MIN(enqueued_at))::float8 END AS oldest_age_seconds,
       MAX(id) AS max_id
FROM batchq_message
WHERE %(queue)s::text IS NULL OR queue = %(queue)s::text
GROUP BY queue;

-- name: mqview_archive
-- Per queue: messages in the archive.
SELECT queue, COUNT(*) AS archived FROM batchq_message_archive
WHERE %(queue)s::text IS NULL OR queue = %(queue)s::text
GROUP BY queue;

-- name: mqview_page
-- A page of a queue's messages in id order after :after, as they stand (nothing is read:
-- read_ct and vt stay), with how far ahead vt is (negative: visible).
SELECT id AS msg_id, read_ct, enqueued_at, vt, message::text AS message, headers::text AS headers,
       CASE WHEN isfinite(vt) THEN EXTRACT(EPOCH FROM vt - clock_timestamp())::float8
            WHEN vt > clock_timestamp() THEN 'Infinity'::float8 ELSE '-Infinity'::float8 END AS vt_in_seconds
FROM batchq_message
WHERE queue = %(queue)s AND id > %(after)s
ORDER BY id
LIMIT %(limit)s;

-- name: mqview_message
-- One message as it stands (a peek: nothing is read).
SELECT id AS msg_id, read_ct, enqueued_at, vt, message::text AS message, headers::text AS headers,
       CASE WHEN isfinite(vt) THEN EXTRACT(EPOCH FROM vt - clock_timestamp())::float8
            WHEN vt > clock_timestamp() THEN 'Infinity'::float8 ELSE '-Infinity'::float8 END AS vt_in_seconds
FROM batchq_message
WHERE queue = %(queue)s AND id = %(id)s;

-- name: mqview_purge_up_to
-- An operator's purge of what they were shown: the queue's messages (held or not) up to the last
-- id they saw, so that a message sent after they looked is not deleted unseen.
DELETE FROM batchq_message WHERE queue = %(queue)s AND id <= %(up_to)s;
