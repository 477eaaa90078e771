-- The message-queue API (batchq.MessageQueue): one table for every queue's messages, keyed by a
-- queue column, so no SQL is ever assembled per queue. Times are timestamptz from
-- clock_timestamp(), the server's clock. message is jsonb so the read filter is `@>`.
CREATE TABLE IF NOT EXISTS batchq_message (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue       TEXT        NOT NULL,
    vt          TIMESTAMPTZ NOT NULL,
    read_ct     INTEGER     NOT NULL DEFAULT 0,
    enqueued_at TIMESTAMPTZ NOT NULL,
    message     JSONB       NOT NULL,
    headers     JSONB       NULL
);

-- Reads walk a queue in id order (FIFO) and skip rows whose vt is in the future. vt is
-- deliberately not in the index: (queue, vt, id) would find the visible rows but then sort
-- every one of them by id, whereas (queue, id) stops after qty rows and only steps over the
-- messages held by consumers or delayed, at the head of the queue. And since no index holds
-- vt, a read's UPDATE can be a HOT update that writes no index entry at all.
CREATE INDEX IF NOT EXISTS batchq_message_read ON batchq_message (queue, id);

-- Archived messages, kept for history; the id is the message's own.
CREATE TABLE IF NOT EXISTS batchq_message_archive (
    id          BIGINT      PRIMARY KEY,
    queue       TEXT        NOT NULL,
    vt          TIMESTAMPTZ NOT NULL,
    read_ct     INTEGER     NOT NULL,
    enqueued_at TIMESTAMPTZ NOT NULL,
    archived_at TIMESTAMPTZ NOT NULL,
    message     JSONB       NOT NULL,
    headers     JSONB       NULL
);
CREATE INDEX IF NOT EXISTS batchq_message_archive_queue ON batchq_message_archive (queue, archived_at);

-- One row per queue: a queue exists once created, and send refuses unknown queues.
CREATE TABLE IF NOT EXISTS batchq_mq_meta (
    queue      TEXT        PRIMARY KEY,
    created_at TIMESTAMPTZ NOT NULL
);

-- Messages ever sent, as a counter split over a few shard rows per queue: each send adds to
-- one shard picked at random in its own transaction, so concurrent senders rarely wait on
-- the same row lock, and the total (the sum) counts exactly the sends that committed.
CREATE TABLE IF NOT EXISTS batchq_mq_sent (
    queue TEXT     NOT NULL,
    shard SMALLINT NOT NULL,
    sent  BIGINT   NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, shard)
);
