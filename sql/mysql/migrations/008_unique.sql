-- Unique jobs: while a job with a unique_key is waiting (ready, scheduled, blocked) or running,
-- an enqueue with the same key writes nothing (INSERT IGNORE) and is given that job's id. MySQL
-- has no partial index, so unique_key_held holds the key's bytes only in those states (NULL
-- otherwise: failed rows, and jobs without a key, never collide) under a UNIQUE index. Bytes,
-- not utf8mb4_bin text: that collation pads, and would take 'k' and 'k ' for one key. STORED,
-- not VIRTUAL: purge, which removes the index entries of every finished job, then reads stored
-- values instead of computing them; the price is that this ALTER rebuilds the table once.
ALTER TABLE batchq_job
    ADD COLUMN unique_key VARCHAR(255) NULL,
    ADD COLUMN unique_key_held VARBINARY(1020) AS (
        CASE WHEN status IN ('ready', 'scheduled', 'blocked', 'processing')
             THEN CAST(unique_key AS BINARY) END) STORED,
    ADD UNIQUE KEY batchq_job_unique (unique_key_held);
