-- Partitioned claims (seed 003's block locks; `batchq run --claim partition`): each job gets a
-- partition number at insert (0 until partitions are set up), and a worker leases one partition
-- at a time from batchq_partition, least recently used first by expire_at, and claims only its
-- jobs. The index they claim through, batchq_job_partition, and the partitions' rows are made by
-- `batchq partitions set N`, not here: row claims (the default) pay nothing for them.
-- lock_by is the leasing worker's name; expire_at (server clock) is the only time that decides.
ALTER TABLE batchq_job ADD COLUMN claim_partition SMALLINT UNSIGNED NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS batchq_partition (
    partition_no SMALLINT UNSIGNED NOT NULL,
    lock_by      VARCHAR(255) NULL,
    expire_at    DATETIME(6)  NOT NULL,
    leased_at    DATETIME(6)  NULL,
    PRIMARY KEY (partition_no),
    KEY batchq_partition_lru (expire_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
