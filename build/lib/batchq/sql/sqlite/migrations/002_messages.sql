-- The message-queue API (batchq.MessageQueue): one table for every queue's messages, keyed by a
-- queue column, so no SQL is ever assembled per queue. Times are UTC text from strftime().
-- AUTOINCREMENT: a message id is never reused, so it stays unique in the archive.
CREATE TABLE IF NOT EXISTS batchq_message (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    queue       TEXT    NOT NULL,
    vt          TEXT    NOT NULL,
    read_ct     INTEGER NOT NULL DEFAULT 0,
    enqueued_at TEXT    NOT NULL,
    message     TEXT    NOT NULL,
    headers     TEXT    NULL
);

-- Reads walk a queue in id order (FIFO) and skip rows whose vt is in the future. vt is
-- deliberately not in the index: (queue, vt, id) would find the visible rows but then sort
-- every one of them by id, whereas (queue, id) stops after qty rows and only steps over the
-- messages held by consumers or delayed, at the head of the queue. Reads, which rewrite vt,
-- then never touch this index.
CREATE INDEX IF NOT EXISTS batchq_message_read ON batchq_message (queue, id);

-- Archived messages, kept for history; the id is the message's own.
CREATE TABLE IF NOT EXISTS batchq_message_archive (
    id          INTEGER PRIMARY KEY,
    queue       TEXT    NOT NULL,
    vt          TEXT    NOT NULL,
    read_ct     INTEGER NOT NULL,
    enqueued_at TEXT    NOT NULL,
    archived_at TEXT    NOT NULL,
    message     TEXT    NOT NULL,
    headers     TEXT    NULL
);
CREATE INDEX IF NOT EXISTS batchq_message_archive_queue ON batchq_message_archive (queue, archived_at);

-- One row per queue: a queue exists once created, and send refuses unknown queues.
CREATE TABLE IF NOT EXISTS batchq_mq_meta (
    queue      TEXT PRIMARY KEY,
    created_at TEXT NOT NULL
);

-- Messages ever sent, as a counter split over a few shard rows per queue (see the MySQL
-- schema: it spares concurrent senders one hot row; SQLite has one writer anyway).
CREATE TABLE IF NOT EXISTS batchq_mq_sent (
    queue TEXT    NOT NULL,
    shard INTEGER NOT NULL,
    sent  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, shard)
);
