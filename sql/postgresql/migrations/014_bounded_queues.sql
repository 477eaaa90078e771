-- Bounded queues and message-queue operations (issue 11, parts 3 and 5): bounded message and job
-- queues, non-durable message queues, the reason a message was archived, and indexes to read and
-- prune the archive.
--
-- A queue's send settings sit on every shard row of its sent counter (batchq_mq_sent), because
-- a send locks one shard row anyway: that locking read gives it the settings as they stand, and
-- configure_queue, which rewrites them on every shard, waits out the sends in flight and holds
-- off new ones until it commits. max_length NULL: unbounded. overflow: 'drop_oldest' or 'reject'.
ALTER TABLE batchq_mq_sent ADD COLUMN IF NOT EXISTS max_length BIGINT NULL;
ALTER TABLE batchq_mq_sent ADD COLUMN IF NOT EXISTS overflow TEXT NULL;
ALTER TABLE batchq_mq_sent ADD COLUMN IF NOT EXISTS durable BOOLEAN NOT NULL DEFAULT TRUE;

-- Why a message was archived: NULL by a consumer's archive(), 'overflow' when a full
-- drop_oldest queue dropped it to make room.
ALTER TABLE batchq_message_archive ADD COLUMN IF NOT EXISTS reason TEXT NULL;
-- read_archive pages a queue's archive by id; prune deletes by age across queues.
CREATE INDEX IF NOT EXISTS batchq_message_archive_page ON batchq_message_archive (queue, id);
CREATE INDEX IF NOT EXISTS batchq_message_archive_age ON batchq_message_archive (archived_at);

-- Non-durable queues (create_queue(..., durable=False)): their messages live in an UNLOGGED
-- table, which writes no WAL (faster) and which PostgreSQL empties after a crash. It inherits
-- batchq_message, so every query that reads, updates or deletes through batchq_message reaches
-- its rows too (a read walks both (queue, id) indexes in a Merge Append); only a send writes to
-- it by name. Its ids come from batchq_message's sequence, so ids stay unique in the archive.
CREATE UNLOGGED TABLE IF NOT EXISTS batchq_message_unlogged () INHERITS (batchq_message);
ALTER TABLE batchq_message_unlogged
    ALTER COLUMN id SET DEFAULT nextval(pg_get_serial_sequence('batchq_message', 'id'));
CREATE UNIQUE INDEX IF NOT EXISTS batchq_message_unlogged_id ON batchq_message_unlogged (id);
CREATE INDEX IF NOT EXISTS batchq_message_unlogged_read ON batchq_message_unlogged (queue, id);

-- Bounded job queues (Queue.configure): at most max_length waiting jobs (NULL: unbounded);
-- overflow 'drop_oldest' (the oldest waiting job fails, with the reason) or 'reject' (QueueFull).
ALTER TABLE batchq_queue ADD COLUMN IF NOT EXISTS max_length BIGINT NULL;
ALTER TABLE batchq_queue ADD COLUMN IF NOT EXISTS overflow TEXT NULL;
