-- Job progress (issue 30): what a running task last reported through batchq.progress(), a
-- fraction in [0, 1] and a short message, and when it was written (the server's clock). Written
-- only by the task's own call (job_progress), fenced by its claim token; never read or written by
-- the claim, the finish or the enqueue. NULL: nothing reported. Kept when a try fails, so an
-- operator sees how far it got; progress_at older than processing_at tells an earlier try's.
-- One statement: the nullable columns at the table's end are added instantly (InnoDB).
-- /*M!100301 IF NOT EXISTS */ is read by MariaDB only (MySQL 8 has no ADD COLUMN IF NOT EXISTS
-- and ignores the comment): there a rerun after a crash before schema_version_set is harmless.
ALTER TABLE batchq_job
    ADD COLUMN /*M!100301 IF NOT EXISTS */ progress DOUBLE NULL,
    ADD COLUMN /*M!100301 IF NOT EXISTS */ progress_message VARCHAR(200) NULL,
    ADD COLUMN /*M!100301 IF NOT EXISTS */ progress_at DATETIME(6) NULL;
