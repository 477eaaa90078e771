-- Failure groups (batchq.failures): each recorded failure's fingerprint (exception type, masked
-- message, the task's innermost frame), and when the job last failed. gc-error groups failed
-- jobs by the fingerprint; rows failed before this migration are grouped by their last error.
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS error_fingerprint VARCHAR(16) NULL;
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS last_error_at TIMESTAMPTZ NULL;
