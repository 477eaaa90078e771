-- Job timeouts: the seconds a job may run, given at enqueue (NULL: the task's @task(timeout=...),
-- else `batchq run --timeout`, else none).
ALTER TABLE batchq_job ADD COLUMN timeout_seconds REAL NULL;
