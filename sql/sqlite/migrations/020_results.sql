-- Job results (issue 30): a job may ask for its outcome to be kept, for Queue.result(id).
-- keep_result: seconds to keep the job's record in batchq_history once it ends (NULL: kept only
-- as its queue's keep_for or `run --keep` says). error_class: the exception class path
-- (`builtins.ValueError`) of the job's latest failed try, next to last_error.
ALTER TABLE batchq_job ADD COLUMN keep_result REAL NULL;
ALTER TABLE batchq_job ADD COLUMN error_class TEXT NULL;

-- batchq_history gains a kept result's end of life (expires_at: finished + keep_result; NULL:
-- the queue's keep_for, or `prune --older-than`, decides), the failed try's exception class, and
-- the outcome 'cancelled' (a kept job cancelled before it ran). SQLite cannot change a CHECK
-- constraint: the table is rebuilt, in the migration's one transaction.
CREATE TABLE batchq_history_020 (
    id                  INTEGER PRIMARY KEY,
    queue               TEXT    NOT NULL,
    task                TEXT    NOT NULL,
    payload             BLOB    NULL,
    serializer          TEXT    NOT NULL,
    outcome             TEXT    NOT NULL CHECK (outcome IN ('succeeded', 'failed', 'cancelled')),
    attempts            INTEGER NOT NULL,
    worker              TEXT    NULL,
    enqueued_at         TEXT    NOT NULL,
    started_at          TEXT    NULL,
    finished_at         TEXT    NOT NULL,
    wall_seconds        REAL    NULL,
    cpu_seconds         REAL    NULL,
    memory_peak_bytes   INTEGER NULL,
    memory_growth_bytes INTEGER NULL,
    result              TEXT    NULL,
    result_note         TEXT    NULL,
    error               TEXT    NULL,
    expires_at          TEXT    NULL,
    error_class         TEXT    NULL
);
INSERT INTO batchq_history_020 (id, queue, task, payload, serializer, outcome, attempts, worker, enqueued_at,
                                started_at, finished_at, wall_seconds, cpu_seconds, memory_peak_bytes,
                                memory_growth_bytes, result, result_note, error)
SELECT id, queue, task, payload, serializer, outcome, attempts, worker, enqueued_at, started_at, finished_at,
       wall_seconds, cpu_seconds, memory_peak_bytes, memory_growth_bytes, result, result_note, error
FROM batchq_history;
DROP TABLE batchq_history;
ALTER TABLE batchq_history_020 RENAME TO batchq_history;
CREATE INDEX IF NOT EXISTS batchq_history_finished ON batchq_history (finished_at);
CREATE INDEX IF NOT EXISTS batchq_history_queue ON batchq_history (queue, finished_at);
CREATE INDEX IF NOT EXISTS batchq_history_expires ON batchq_history (expires_at) WHERE expires_at IS NOT NULL;
