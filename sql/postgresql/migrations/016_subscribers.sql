-- Topics with subscribers (issue 11): publish() puts one copy of a message into the message
-- queue of every subscription of the topic, in the publisher's transaction.
-- A topic exists once subscribed to: a few shard rows, as batchq_mq_sent has per queue. A
-- publish locks one shard (picked at random: publishers rarely wait for each other) and counts
-- itself there; subscribe and unsubscribe lock every shard, so they wait for the publishes in
-- flight and a publish never runs while the topic's subscribers change.
CREATE TABLE IF NOT EXISTS batchq_mq_topic (
    topic     TEXT     NOT NULL,
    shard     SMALLINT NOT NULL,
    published BIGINT   NOT NULL DEFAULT 0,
    PRIMARY KEY (topic, shard)
);

-- One row per subscription: its message queue ('topic:subscriber', a queue like any other)
-- and its delivery policy for `batchq consume`: at_least_once (delete after the handler
-- returns; a message read max_tries times without success is archived with its error) or
-- at_most_once (delete before the handler runs). vt_seconds: how long a read hides a message.
CREATE TABLE IF NOT EXISTS batchq_mq_subscription (
    topic      TEXT             NOT NULL,
    subscriber TEXT             NOT NULL,
    queue      TEXT             NOT NULL UNIQUE,
    policy     TEXT             NOT NULL CHECK (policy IN ('at_least_once', 'at_most_once')),
    max_tries  INTEGER          NOT NULL CHECK (max_tries BETWEEN 1 AND 65535),
    vt_seconds DOUBLE PRECISION NOT NULL CHECK (vt_seconds >= 0),
    created_at TIMESTAMPTZ      NOT NULL,
    PRIMARY KEY (topic, subscriber)
);

-- Why a message was archived by `batchq consume` (its handler's last error); NULL for messages
-- archived by archive(). Nullable without a default: no table rewrite.
ALTER TABLE batchq_message_archive ADD COLUMN IF NOT EXISTS error TEXT NULL;

-- Wake-up for waiting consumers (`batchq consume`): every publish counts itself in one shard
-- row of its topic, and this trigger NOTIFYs batchq_messages with the topic, sent on commit
-- (a rollback wakes nobody). Plain send() notifies nothing: consumers poll as well. The price
-- is the one the job trigger has (001_jobs.sql): notifying commits are serialised.
CREATE OR REPLACE FUNCTION batchq_notify_topic() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_notify('batchq_messages', NEW.topic); RETURN NULL; END
$$;

DROP TRIGGER IF EXISTS batchq_mq_topic_notify ON batchq_mq_topic;
CREATE TRIGGER batchq_mq_topic_notify
    AFTER UPDATE OF published ON batchq_mq_topic
    FOR EACH ROW EXECUTE FUNCTION batchq_notify_topic();
