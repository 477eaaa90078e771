-- Job results (issue 30): a job may ask for its outcome to be kept, for Queue.result(id).
-- keep_result: seconds to keep the job's record in batchq_history once it ends (NULL: kept only
-- as its queue's keep_for or `run --keep` says). error_class: the exception class path
-- (`builtins.ValueError`) of the job's latest failed try, next to last_error.
ALTER TABLE batchq_job ADD COLUMN keep_result DOUBLE NULL, ADD COLUMN error_class VARCHAR(255) NULL;

-- A kept result's end of life (finished_at + keep_result; NULL: the queue's keep_for, or
-- `prune --older-than`, decides), the failed try's exception class, and the outcome
-- 'cancelled' (a kept job cancelled before it ran: a value added at the ENUM's end).
ALTER TABLE batchq_history ADD COLUMN expires_at DATETIME(6) NULL, ADD COLUMN error_class VARCHAR(255) NULL,
    MODIFY outcome ENUM('succeeded', 'failed', 'cancelled') NOT NULL,
    ADD KEY batchq_history_expires (expires_at);
