-- Task versions and a per-enqueue backoff (issue 12). task_version: the @task(version=...) the
-- job was enqueued with (NULL, as in rows written before this migration: version 1); a worker
-- upgrades an older payload before the call and puts back one newer than it knows.
-- version_wait: who put it back ("host:pid knows version 2"), for `batchq explain` and stats;
-- cleared by the next claim. backoff: the first retry's delay in seconds given to enqueue (NULL:
-- the task's, else `run --backoff`).
ALTER TABLE batchq_job ADD COLUMN task_version INTEGER NULL;
ALTER TABLE batchq_job ADD COLUMN backoff REAL NULL;
ALTER TABLE batchq_job ADD COLUMN version_wait TEXT NULL;
