-- Topics and subscriptions (batchq.mq.pubsub) on SQLite, by name. A subscription's copies are
-- ordinary messages of its queue (mq.sql). Every write transaction is BEGIN IMMEDIATE (one
-- writer), so a publish never overlaps a subscribe or unsubscribe.

-- name: pubsub_topic_shard_create
-- One shard of a topic, created by its first subscribe.
INSERT OR IGNORE INTO batchq_mq_topic (topic, shard, published) VALUES (:topic, :shard, 0);

-- name: pubsub_topic_lock_all
-- subscribe/unsubscribe: the servers lock every shard here; BEGIN IMMEDIATE holds the database.
SELECT shard FROM batchq_mq_topic WHERE topic = :topic ORDER BY shard;

-- name: pubsub_subscription_get
-- One subscription.
SELECT topic, subscriber, queue, policy, max_tries, vt_seconds, created_at
FROM batchq_mq_subscription WHERE topic = :topic AND subscriber = :subscriber;

-- name: pubsub_subscription_list
-- Every subscription, by topic and subscriber.
SELECT topic, subscriber, queue, policy, max_tries, vt_seconds, created_at
FROM batchq_mq_subscription ORDER BY topic, subscriber;

-- name: pubsub_subscription_insert
-- A new subscription (its queue is created in the same transaction).
INSERT INTO batchq_mq_subscription (topic, subscriber, queue, policy, max_tries, vt_seconds, created_at)
VALUES (:topic, :subscriber, :queue, :policy, :max_tries, :vt, strftime('%Y-%m-%d %H:%M:%f', 'now'));

-- name: pubsub_subscription_update
-- Change a subscription's delivery policy.
UPDATE batchq_mq_subscription SET policy = :policy, max_tries = :max_tries, vt_seconds = :vt
WHERE topic = :topic AND subscriber = :subscriber;

-- name: pubsub_subscription_of_queue
-- drop_queue: the subscription whose queue this is, if any (such a queue goes with unsubscribe).
SELECT topic, subscriber FROM batchq_mq_subscription WHERE queue = :queue;

-- name: pubsub_subscription_delete
-- unsubscribe; 0 rows when there was none.
DELETE FROM batchq_mq_subscription WHERE topic = :topic AND subscriber = :subscriber;

-- name: pubsub_publish_lock
-- publish, 1/3: count the publish in one shard of the topic; 0 rows: nobody ever subscribed.
UPDATE batchq_mq_topic SET published = published + 1 WHERE topic = :topic AND shard = :shard;

-- name: pubsub_publish_count
-- publish, 2/3: add to one shard of each subscription queue's sent counter (mq_count_sent).
UPDATE batchq_mq_sent SET sent = sent + 1
WHERE shard = :shard AND queue IN (SELECT queue FROM batchq_mq_subscription WHERE topic = :topic);

-- name: pubsub_publish
-- publish, 3/3: one copy per subscription, one statement whatever their number.
INSERT INTO batchq_message (queue, vt, read_ct, enqueued_at, message, headers)
SELECT queue, strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :delay)), 0,
       strftime('%Y-%m-%d %H:%M:%f', 'now'), :message, :headers
FROM batchq_mq_subscription WHERE topic = :topic ORDER BY queue;

-- name: pubsub_archive_copy_error
-- A message a consumer gave up on, copied into the archive with its handler's error.
INSERT INTO batchq_message_archive (id, queue, vt, read_ct, enqueued_at, archived_at, message, headers, error)
SELECT id, queue, vt, read_ct, enqueued_at, strftime('%Y-%m-%d %H:%M:%f', 'now'), message, headers, :error
FROM batchq_message WHERE id = :id AND queue = :queue;

-- name: pubsub_archive_failures
-- The newest messages of a queue archived with an error.
SELECT id AS msg_id, read_ct, enqueued_at, archived_at, message, headers, error
FROM batchq_message_archive WHERE queue = :queue AND error IS NOT NULL
ORDER BY id DESC LIMIT :limit;

-- name: mq_binding_insert
-- bind_topic (after mq_queue_lock found the queue): 0 rows when the binding exists.
INSERT OR IGNORE INTO batchq_mq_binding (pattern, queue, created_at)
VALUES (:pattern, :queue, strftime('%Y-%m-%d %H:%M:%f', 'now'));

-- name: mq_binding_delete
-- unbind_topic: 0 rows when there was no such binding.
DELETE FROM batchq_mq_binding WHERE pattern = :pattern AND queue = :queue;

-- name: mq_binding_list
-- Every binding: send_topic matches their patterns in Python (few rows, one regex each).
SELECT pattern, queue, created_at FROM batchq_mq_binding ORDER BY pattern, queue;

-- name: mq_binding_drop_queue
-- drop_queue: the queue's bindings go with it.
DELETE FROM batchq_mq_binding WHERE queue = :queue;
