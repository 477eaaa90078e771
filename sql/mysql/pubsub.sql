-- Topics and subscriptions (batchq.mq.pubsub) on MySQL/MariaDB, by name. A subscription's copies
-- are ordinary messages of its queue (mq.sql). Lock order, everywhere: topic shards, then the
-- subscription rows, then the queues' counters and messages.

-- name: pubsub_topic_shard_create
-- One shard of a topic, created by its first subscribe.
INSERT IGNORE INTO batchq_mq_topic (topic, shard, published) VALUES (%(topic)s, %(shard)s, 0);

-- name: pubsub_topic_lock_all
-- subscribe/unsubscribe: lock every shard, which waits out the publishes in flight.
SELECT shard FROM batchq_mq_topic WHERE topic = %(topic)s ORDER BY shard FOR UPDATE;

-- name: pubsub_subscription_get
-- One subscription.
SELECT topic, subscriber, queue, policy, max_tries, vt_seconds, created_at
FROM batchq_mq_subscription WHERE topic = %(topic)s AND subscriber = %(subscriber)s;

-- name: pubsub_subscription_list
-- Every subscription, by topic and subscriber.
SELECT topic, subscriber, queue, policy, max_tries, vt_seconds, created_at
FROM batchq_mq_subscription ORDER BY topic, subscriber;

-- name: pubsub_subscription_insert
-- A new subscription (its queue is created in the same transaction).
INSERT INTO batchq_mq_subscription (topic, subscriber, queue, policy, max_tries, vt_seconds, created_at)
VALUES (%(topic)s, %(subscriber)s, %(queue)s, %(policy)s, %(max_tries)s, %(vt)s, UTC_TIMESTAMP(6));

-- name: pubsub_subscription_update
-- Change a subscription's delivery policy; fan-out is unaffected, so no topic lock.
UPDATE batchq_mq_subscription SET policy = %(policy)s, max_tries = %(max_tries)s, vt_seconds = %(vt)s
WHERE topic = %(topic)s AND subscriber = %(subscriber)s;

-- name: pubsub_subscription_of_queue
-- drop_queue: the subscription whose queue this is, if any (such a queue goes with unsubscribe).
SELECT topic, subscriber FROM batchq_mq_subscription WHERE queue = %(queue)s;

-- name: pubsub_subscription_delete
-- unsubscribe, under the topic's locks; 0 rows when there was none.
DELETE FROM batchq_mq_subscription WHERE topic = %(topic)s AND subscriber = %(subscriber)s;

-- name: pubsub_publish_lock
-- publish, 1/3: count the publish in one shard of the topic, which locks that shard until the
-- publisher commits; 0 rows: nobody ever subscribed to the topic.
UPDATE batchq_mq_topic SET published = published + 1 WHERE topic = %(topic)s AND shard = %(shard)s;

-- name: pubsub_publish_count
-- publish, 2/3: add to one shard of each subscription queue's sent counter (mq_count_sent).
UPDATE batchq_mq_sent SET sent = sent + 1
WHERE shard = %(shard)s AND queue IN (SELECT queue FROM batchq_mq_subscription WHERE topic = %(topic)s);

-- name: pubsub_publish
-- publish, 3/3: one copy per subscription, one statement whatever their number. In an
-- application's REPEATABLE READ transaction the SELECT is a locking read (shared next-key locks
-- on the topic's subscription rows): it sees the latest subscriptions, not an older snapshot,
-- and subscribe/unsubscribe wait for the publisher's commit (they wait on the shard anyway).
INSERT INTO batchq_message (queue, vt, read_ct, enqueued_at, message, headers)
SELECT queue, UTC_TIMESTAMP(6) + INTERVAL ROUND(%(delay)s * 1000000) MICROSECOND, 0, UTC_TIMESTAMP(6),
       %(message)s, %(headers)s
FROM batchq_mq_subscription WHERE topic = %(topic)s ORDER BY queue;

-- name: pubsub_archive_copy_error
-- A message a consumer gave up on, copied into the archive with its handler's error.
INSERT INTO batchq_message_archive (id, queue, vt, read_ct, enqueued_at, archived_at, message, headers, error)
SELECT id, queue, vt, read_ct, enqueued_at, UTC_TIMESTAMP(6), message, headers, %(error)s
FROM batchq_message WHERE id = %(id)s AND queue = %(queue)s;

-- name: pubsub_archive_failures
-- The newest messages of a queue archived with an error.
SELECT id AS msg_id, read_ct, enqueued_at, archived_at, message, headers, error
FROM batchq_message_archive WHERE queue = %(queue)s AND error IS NOT NULL
ORDER BY id DESC LIMIT %(limit)s;

-- name: mq_binding_insert
-- bind_topic (after mq_queue_lock found the queue): 0 rows when the binding exists.
INSERT IGNORE INTO batchq_mq_binding (pattern, queue, created_at) VALUES (%(pattern)s, %(queue)s, UTC_TIMESTAMP(6));

-- name: mq_binding_delete
-- unbind_topic: 0 rows when there was no such binding.
DELETE FROM batchq_mq_binding WHERE pattern = %(pattern)s AND queue = %(queue)s;

-- name: mq_binding_list
-- Every binding: send_topic matches their patterns in Python (few rows, one regex each).
SELECT pattern, queue, created_at FROM batchq_mq_binding ORDER BY pattern, queue;

-- name: mq_binding_drop_queue
-- drop_queue: the queue's bindings go with it.
DELETE FROM batchq_mq_binding WHERE queue = %(queue)s;
