-- Topics with subscribers (issue 11): publish() puts one copy of a message into the message
-- queue of every subscription of the topic, in the publisher's transaction.
-- A topic exists once subscribed to: a few shard rows, as batchq_mq_sent has per queue (the
-- servers' publishers lock one shard each; SQLite has one writer anyway).
CREATE TABLE IF NOT EXISTS batchq_mq_topic (
    topic     TEXT    NOT NULL,
    shard     INTEGER NOT NULL,
    published INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (topic, shard)
);

-- One row per subscription: its message queue ('topic:subscriber', a queue like any other)
-- and its delivery policy for `batchq consume`: at_least_once (delete after the handler
-- returns; a message read max_tries times without success is archived with its error) or
-- at_most_once (delete before the handler runs). vt_seconds: how long a read hides a message.
CREATE TABLE IF NOT EXISTS batchq_mq_subscription (
    topic      TEXT    NOT NULL,
    subscriber TEXT    NOT NULL,
    queue      TEXT    NOT NULL UNIQUE,
    policy     TEXT    NOT NULL CHECK (policy IN ('at_least_once', 'at_most_once')),
    max_tries  INTEGER NOT NULL CHECK (max_tries BETWEEN 1 AND 65535),
    vt_seconds REAL    NOT NULL CHECK (vt_seconds >= 0),
    created_at TEXT    NOT NULL,
    PRIMARY KEY (topic, subscriber)
);

-- Why a message was archived by `batchq consume` (its handler's last error); NULL for messages
-- archived by archive().
ALTER TABLE batchq_message_archive ADD COLUMN error TEXT NULL;
