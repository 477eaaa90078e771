-- Job timeouts: the seconds a job may run, given at enqueue (NULL: the task's @task(timeout=...),
-- else `batchq run --timeout`, else none). Nullable without a default: a change of the catalog
-- only, whatever the number of jobs.
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS timeout_seconds DOUBLE PRECISION NULL;
