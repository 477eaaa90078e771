-- Typed queues (issue 11, part 1). payload_schema: the queue's payload type as canonical JSON
-- Schema text (NULL: untyped), on message queues (batchq_mq_meta) and job queues (batchq_queue).
-- schema_hash on each shard of a message queue's sent counter: the hash of that text (0:
-- untyped); a send counts itself only where the hash is the one it validated against, so a
-- sender with a stale type counts nothing and learns the new one (batchq.typed). A message that
-- does not match its queue's type is archived with the reason in the archive's reason column (014).
-- Nullable columns and a constant default: no table rewrite.
ALTER TABLE batchq_mq_meta ADD COLUMN IF NOT EXISTS payload_schema TEXT NULL;
ALTER TABLE batchq_mq_sent ADD COLUMN IF NOT EXISTS schema_hash BIGINT NOT NULL DEFAULT 0;
ALTER TABLE batchq_queue ADD COLUMN IF NOT EXISTS payload_schema TEXT NULL;
