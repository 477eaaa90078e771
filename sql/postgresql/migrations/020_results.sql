-- Job results (issue 30): a job may ask for its outcome to be kept, for Queue.result(id).
-- keep_result: seconds to keep the job's record in batchq_history once it ends (NULL: kept only
-- as its queue's keep_for or `run --keep` says). error_class: the exception class path
-- (`builtins.ValueError`) of the job's latest failed try, next to last_error. Nullable columns
-- without a default: catalog changes only, the table is not rewritten.
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS keep_result DOUBLE PRECISION NULL;
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS error_class VARCHAR(255) NULL;

-- A kept result's end of life (finished_at + keep_result; NULL: the queue's keep_for, or
-- `prune --older-than`, decides), the failed try's exception class, and the outcome
-- 'cancelled' (a kept job cancelled before it ran). NOT VALID: the rows there are valid, and
-- none is scanned under the lock; new rows are checked.
ALTER TABLE batchq_history ADD COLUMN IF NOT EXISTS expires_at TIMESTAMPTZ NULL;
ALTER TABLE batchq_history ADD COLUMN IF NOT EXISTS error_class VARCHAR(255) NULL;
ALTER TABLE batchq_history DROP CONSTRAINT IF EXISTS batchq_history_outcome_check;
ALTER TABLE batchq_history ADD CONSTRAINT batchq_history_outcome_check
    CHECK (outcome IN ('succeeded', 'failed', 'cancelled')) NOT VALID;
CREATE INDEX IF NOT EXISTS batchq_history_expires ON batchq_history (expires_at) WHERE expires_at IS NOT NULL;

-- Queue.result(id, wait=...) LISTENs on batchq_results: a job's record written (it succeeded, or
-- failed for good, and is kept) or a job failed for good (kept or not) says its id. Neither
-- fires for a job that keeps nothing and succeeds: its claim is the same statement as before.
CREATE OR REPLACE FUNCTION batchq_notify_result() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_notify('batchq_results', NEW.id::text); RETURN NULL; END
$$;

DROP TRIGGER IF EXISTS batchq_history_notify ON batchq_history;
CREATE TRIGGER batchq_history_notify
    AFTER INSERT OR UPDATE ON batchq_history
    FOR EACH ROW EXECUTE FUNCTION batchq_notify_result();

DROP TRIGGER IF EXISTS batchq_job_failed_notify ON batchq_job;
CREATE TRIGGER batchq_job_failed_notify
    AFTER UPDATE OF status ON batchq_job
    FOR EACH ROW WHEN (NEW.status = 'failed')
    EXECUTE FUNCTION batchq_notify_result();
