-- Control from inside a task (issue 30): snoozes counts the times a job's task raised
-- batchq.Snooze and the job was put back for later, uncounted as a try (error_count and
-- last_error untouched). Shown by `batchq explain`; a job that snoozes more than its task's
-- max_snoozes fails for good (batchq.control). Reset with error_count by a requeue of a failed job.
-- snoozed_at: when it last snoozed (NULL: never), so that explain tells a snooze's wait from a
-- backoff's (whichever of snoozed_at and last_error_at is later wrote run_at).
-- Columns with a constant default or none at the table's end: instant on MySQL 8.0 and MariaDB 10.3+,
-- so a large table is not rebuilt.
ALTER TABLE batchq_job
    ADD COLUMN snoozes SMALLINT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN snoozed_at DATETIME(6) NULL;
