-- Job timeouts: the seconds a job may run, given at enqueue (NULL: the task's @task(timeout=...),
-- else `batchq run --timeout`, else none). Added at the table's end, nullable, no default:
-- InnoDB adds it instantly, whatever the number of jobs.
ALTER TABLE batchq_job ADD COLUMN timeout_seconds DOUBLE NULL;
