-- Bounded queues and message-queue operations (issue 11, parts 3 and 5): bounded message and job
-- queues, the reason a message was archived, and indexes to read and prune the archive.
-- (Non-durable message queues are PostgreSQL UNLOGGED tables; MySQL/MariaDB have no
-- transactional equivalent, so they are refused.)
--
-- A queue's send settings sit on every shard row of its sent counter (batchq_mq_sent), because
-- a send locks one shard row anyway: that locking read gives it the settings as they stand, and
-- configure_queue, which rewrites them on every shard, waits out the sends in flight and holds
-- off new ones until it commits. max_length NULL: unbounded. overflow: 'drop_oldest' or 'reject'.
ALTER TABLE batchq_mq_sent
    ADD COLUMN max_length BIGINT UNSIGNED NULL,
    ADD COLUMN overflow VARCHAR(16) NULL,
    ADD COLUMN durable TINYINT(1) NOT NULL DEFAULT 1;

-- Why a message was archived: NULL by a consumer's archive(), 'overflow' when a full
-- drop_oldest queue dropped it to make room. read_archive pages a queue's archive by id;
-- prune deletes by age across queues.
ALTER TABLE batchq_message_archive
    ADD COLUMN reason TEXT NULL,
    ADD KEY batchq_message_archive_page (queue, id),
    ADD KEY batchq_message_archive_age (archived_at);

-- Bounded job queues (Queue.configure): at most max_length waiting jobs (NULL: unbounded);
-- overflow 'drop_oldest' (the oldest waiting job fails, with the reason) or 'reject' (QueueFull).
ALTER TABLE batchq_queue
    ADD COLUMN max_length BIGINT UNSIGNED NULL,
    ADD COLUMN overflow VARCHAR(16) NULL;
