-- Job results (issue 30): a job may ask for its outcome to be kept, for Queue.result(id).
-- keep_result: seconds to keep the job's record in batchq_history once it ends (NULL: kept only
-- as its queue's keep_for or `run --keep` says). error_class: the exception class path
-- (`builtins.ValueError`) of the job's latest failed try, next to last_error.
ALTER TABLE batchq_job ADD COLUMN keep_result REAL NULL;
ALTER TABLE batchq_job ADD COLUMN error_class TEXT NULL;

-- A kept result's end of life (finished_at + keep_result; NULL: the queue's keep_for, or
-- `prune --older-than`, decides), and the failed try's exception class.
ALTER TABLE batchq_history ADD COLUMN expires_at TEXT NULL;
ALTER TABLE batchq_history ADD COLUMN error_class TEXT NULL;
CREATE INDEX IF NOT EXISTS batchq_history_expires ON batchq_history (expires_at) WHERE expires_at IS NOT NULL;
