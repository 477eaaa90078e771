-- Topics with subscribers (issue 11): publish() puts one copy of a message into the message
-- queue of every subscription of the topic, in the publisher's transaction.
-- A topic exists once subscribed to: a few shard rows, as batchq_mq_sent has per queue. A
-- publish locks one shard (picked at random: publishers rarely wait for each other) and counts
-- itself there; subscribe and unsubscribe lock every shard, so they wait for the publishes in
-- flight and a publish never runs while the topic's subscribers change.
CREATE TABLE IF NOT EXISTS batchq_mq_topic (
    topic     VARCHAR(64)     NOT NULL,
    shard     SMALLINT        NOT NULL,
    published BIGINT UNSIGNED NOT NULL DEFAULT 0,
    PRIMARY KEY (topic, shard)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One row per subscription: its message queue ('topic:subscriber', a queue like any other)
-- and its delivery policy for `batchq consume`: at_least_once (delete after the handler
-- returns; a message read max_tries times without success is archived with its error) or
-- at_most_once (delete before the handler runs). vt_seconds: how long a read hides a message.
CREATE TABLE IF NOT EXISTS batchq_mq_subscription (
    topic      VARCHAR(64)       NOT NULL,
    subscriber VARCHAR(64)       NOT NULL,
    queue      VARCHAR(64)       NOT NULL,
    policy     VARCHAR(16)       NOT NULL CHECK (policy IN ('at_least_once', 'at_most_once')),
    max_tries  SMALLINT UNSIGNED NOT NULL CHECK (max_tries >= 1),
    vt_seconds DOUBLE            NOT NULL CHECK (vt_seconds >= 0),
    created_at DATETIME(6)       NOT NULL,
    PRIMARY KEY (topic, subscriber),
    UNIQUE KEY batchq_mq_subscription_queue (queue)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Why a message was archived by `batchq consume` (its handler's last error); NULL for messages
-- archived by archive(). Nullable, at the end: an instant ADD COLUMN.
ALTER TABLE batchq_message_archive ADD COLUMN error TEXT NULL;
