-- Partitioned claims (seed 003's block locks; `batchq run --claim partition`): each job gets a
-- partition number at insert (0 until partitions are set up), and a worker leases one partition
-- at a time from batchq_partition, least recently used first by expire_at, and claims only its
-- jobs. The index they claim through, batchq_job_partition, and the partitions' rows are made by
-- `batchq partitions set N`, not here: row claims (the default) pay nothing for them.
-- lock_by is the leasing worker's name; expire_at (the database's clock, text that sorts as
-- time) is the only time that decides. SQLite has one writer, so partitions bring it nothing
-- but the same behaviour as elsewhere.
ALTER TABLE batchq_job ADD COLUMN claim_partition INTEGER NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS batchq_partition (
    partition_no INTEGER NOT NULL PRIMARY KEY CHECK (typeof(partition_no) = 'integer' AND partition_no >= 0),
    lock_by      TEXT    NULL,
    expire_at    TEXT    NOT NULL CHECK (expire_at IS strftime('%Y-%m-%d %H:%M:%f', expire_at)),
    leased_at    TEXT    NULL
);
CREATE INDEX IF NOT EXISTS batchq_partition_lru ON batchq_partition (expire_at);
