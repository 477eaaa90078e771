-- The message-queue API (batchq.MessageQueue): one table for every queue's messages, keyed by a
-- queue column, so no SQL is ever assembled per queue. Times are UTC DATETIME(6) written and
-- compared with UTC_TIMESTAMP(6), the server's clock.
CREATE TABLE IF NOT EXISTS batchq_message (
    id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    queue       VARCHAR(64)  NOT NULL,
    vt          DATETIME(6)  NOT NULL,
    read_ct     INT UNSIGNED NOT NULL DEFAULT 0,
    enqueued_at DATETIME(6)  NOT NULL,
    message     JSON         NOT NULL,
    headers     JSON         NULL,
    -- Reads walk a queue in id order (FIFO) and skip rows whose vt is in the future. vt is
    -- deliberately not in the key: (queue, vt, id) would find the visible rows but then sort
    -- every one of them by id (a filesort over the whole visible backlog, locking each row before
    -- the LIMIT applies), whereas (queue, id) stops after qty rows and only steps over the
    -- messages held by consumers or delayed, at the head of the queue. Delayed messages queued
    -- ahead of a big visible backlog are the cost: each read steps over them.
    -- (queue, id) is the clustered key, not a secondary index: measured on MariaDB 10.11, a
    -- locking read through a secondary index keeps the rows that fail its WHERE (held, or not
    -- matching the JSON filter) locked until commit even under READ COMMITTED, so concurrent
    -- readers skipped them; walking the clustered index, InnoDB releases them at once.
    PRIMARY KEY (queue, id),
    -- AUTO_INCREMENT needs an index that starts with id; it also serves lookups by id alone.
    UNIQUE KEY batchq_message_id (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Archived messages, kept for history; the id is the message's own.
CREATE TABLE IF NOT EXISTS batchq_message_archive (
    id          BIGINT UNSIGNED NOT NULL,
    queue       VARCHAR(64)  NOT NULL,
    vt          DATETIME(6)  NOT NULL,
    read_ct     INT UNSIGNED NOT NULL,
    enqueued_at DATETIME(6)  NOT NULL,
    archived_at DATETIME(6)  NOT NULL,
    message     JSON         NOT NULL,
    headers     JSON         NULL,
    PRIMARY KEY (id),
    KEY batchq_message_archive_queue (queue, archived_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One row per queue: a queue exists once created, and send refuses unknown queues.
CREATE TABLE IF NOT EXISTS batchq_mq_meta (
    queue      VARCHAR(64) NOT NULL,
    created_at DATETIME(6) NOT NULL,
    PRIMARY KEY (queue)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Messages ever sent, as a counter split over a few shard rows per queue: each send adds to
-- one shard picked at random in its own transaction, so concurrent senders rarely wait on
-- the same row lock, and the total (the sum) counts exactly the sends that committed.
CREATE TABLE IF NOT EXISTS batchq_mq_sent (
    queue VARCHAR(64)     NOT NULL,
    shard SMALLINT        NOT NULL,
    sent  BIGINT UNSIGNED NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, shard)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
