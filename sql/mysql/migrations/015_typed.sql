-- Typed queues (issue 11, part 1). payload_schema: the queue's payload type as canonical JSON
-- Schema text (NULL: untyped), on message queues (batchq_mq_meta) and job queues (batchq_queue).
-- schema_hash on each shard of a message queue's sent counter: the hash of that text (0:
-- untyped); a send counts itself only where the hash is the one it validated against, so a
-- sender with a stale type counts nothing and learns the new one (batchq.typed). A message that
-- does not match its queue's type is archived with the reason in the archive's reason column (014).
-- Nullable columns, or a constant default, at the end: instant on MariaDB 10.3+ and MySQL 8.0.
ALTER TABLE batchq_mq_meta ADD COLUMN payload_schema MEDIUMTEXT NULL;
ALTER TABLE batchq_mq_sent ADD COLUMN schema_hash BIGINT NOT NULL DEFAULT 0;
ALTER TABLE batchq_queue ADD COLUMN payload_schema MEDIUMTEXT NULL;
