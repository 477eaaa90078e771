-- Bounded queues and message-queue operations (issue 11, parts 3 and 5): bounded message and job
-- queues, the reason a message was archived, and indexes to read and prune the archive.
-- (Non-durable message queues are PostgreSQL UNLOGGED tables; a SQLite database is one
-- file with one journal, so they are refused.)
--
-- A queue's send settings sit on every shard row of its sent counter (batchq_mq_sent), as on the
-- servers, where a send's lock on its shard row gives it the settings as they stand. SQLite has
-- one writer, so here that is simply where they are. max_length NULL: unbounded. overflow:
-- 'drop_oldest' or 'reject'.
ALTER TABLE batchq_mq_sent ADD COLUMN max_length INTEGER NULL;
ALTER TABLE batchq_mq_sent ADD COLUMN overflow TEXT NULL;
ALTER TABLE batchq_mq_sent ADD COLUMN durable INTEGER NOT NULL DEFAULT 1;

-- Why a message was archived: NULL by a consumer's archive(), 'overflow' when a full
-- drop_oldest queue dropped it to make room.
ALTER TABLE batchq_message_archive ADD COLUMN reason TEXT NULL;
-- read_archive pages a queue's archive by id; prune deletes by age across queues.
CREATE INDEX IF NOT EXISTS batchq_message_archive_page ON batchq_message_archive (queue, id);
CREATE INDEX IF NOT EXISTS batchq_message_archive_age ON batchq_message_archive (archived_at);

-- Bounded job queues (Queue.configure): at most max_length waiting jobs (NULL: unbounded);
-- overflow 'drop_oldest' (the oldest waiting job fails, with the reason) or 'reject' (QueueFull).
ALTER TABLE batchq_queue ADD COLUMN max_length INTEGER NULL;
ALTER TABLE batchq_queue ADD COLUMN overflow TEXT NULL;
