-- Task versions and a per-enqueue backoff (issue 12). task_version: the @task(version=...) the
-- job was enqueued with (NULL, as in rows written before this migration: version 1); a worker
-- upgrades an older payload before the call and puts back one newer than it knows.
-- version_wait: who put it back ("host:pid knows version 2"), for `batchq explain` and stats;
-- cleared by the next claim. backoff: the first retry's delay in seconds given to enqueue (NULL:
-- the task's, else `run --backoff`). Nullable columns at the end: metadata only on MariaDB 10.3+
-- and MySQL 8.0 (instant ADD COLUMN), so a large table is not rebuilt.
ALTER TABLE batchq_job
    ADD COLUMN task_version SMALLINT UNSIGNED NULL,
    ADD COLUMN backoff DOUBLE NULL,
    ADD COLUMN version_wait VARCHAR(255) NULL;
