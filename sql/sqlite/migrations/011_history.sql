-- Job history and resource accounting (issue 12). batchq_history keeps the finished jobs of
-- queues that ask for it (batchq_queue.keep_for) or of workers run with --keep: one row per job,
-- keyed by the job's id (never reused: batchq_job is AUTOINCREMENT), written in the same
-- transaction as the job's DELETE (success) or its last job_error (failure). finished_at orders
-- `batchq history` and bounds `batchq prune`; (queue, finished_at) serves a queue's history and
-- the per-queue prune.
CREATE TABLE IF NOT EXISTS batchq_history (
    id                  INTEGER PRIMARY KEY,
    queue               TEXT    NOT NULL,
    task                TEXT    NOT NULL,
    payload             BLOB    NULL,
    serializer          TEXT    NOT NULL,
    outcome             TEXT    NOT NULL CHECK (outcome IN ('succeeded', 'failed')),
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
    error               TEXT    NULL
);
CREATE INDEX IF NOT EXISTS batchq_history_finished ON batchq_history (finished_at);
CREATE INDEX IF NOT EXISTS batchq_history_queue ON batchq_history (queue, finished_at);

-- A queue's history is kept this many seconds (NULL: not kept unless a worker runs with --keep).
ALTER TABLE batchq_queue ADD COLUMN keep_for REAL NULL;

-- The latest failed try of a job, measured in its worker (gc-error shows it).
ALTER TABLE batchq_job ADD COLUMN last_worker TEXT NULL;
ALTER TABLE batchq_job ADD COLUMN last_started_at TEXT NULL;
ALTER TABLE batchq_job ADD COLUMN last_wall_seconds REAL NULL;
ALTER TABLE batchq_job ADD COLUMN last_cpu_seconds REAL NULL;
ALTER TABLE batchq_job ADD COLUMN last_memory_peak_bytes INTEGER NULL;
ALTER TABLE batchq_job ADD COLUMN last_memory_growth_bytes INTEGER NULL;
