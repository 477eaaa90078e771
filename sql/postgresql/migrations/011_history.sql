-- Job history and resource accounting (issue 12). batchq_history keeps the finished jobs of
-- queues that ask for it (batchq_queue.keep_for) or of workers run with --keep: one row per job,
-- keyed by the job's id, written in the same transaction as the job's DELETE (success) or its
-- last job_error (failure). finished_at orders `batchq history` and bounds `batchq prune`;
-- (queue, finished_at) serves a queue's history and the per-queue prune.
CREATE TABLE IF NOT EXISTS batchq_history (
    id                  BIGINT       PRIMARY KEY,
    queue               VARCHAR(64)  NOT NULL,
    task                VARCHAR(255) NOT NULL,
    payload             BYTEA        NULL,
    serializer          VARCHAR(16)  NOT NULL,
    outcome             VARCHAR(10)  NOT NULL CHECK (outcome IN ('succeeded', 'failed')),
    attempts            INTEGER      NOT NULL,
    worker              VARCHAR(128) NULL,
    enqueued_at         TIMESTAMPTZ  NOT NULL,
    started_at          TIMESTAMPTZ  NULL,
    finished_at         TIMESTAMPTZ  NOT NULL,
    wall_seconds        DOUBLE PRECISION NULL,
    cpu_seconds         DOUBLE PRECISION NULL,
    memory_peak_bytes   BIGINT       NULL,
    memory_growth_bytes BIGINT       NULL,
    result              TEXT         NULL,
    result_note         VARCHAR(255) NULL,
    error               TEXT         NULL
);
CREATE INDEX IF NOT EXISTS batchq_history_finished ON batchq_history (finished_at);
CREATE INDEX IF NOT EXISTS batchq_history_queue ON batchq_history (queue, finished_at);

-- A queue's history is kept this many seconds (NULL: not kept unless a worker runs with --keep).
ALTER TABLE batchq_queue ADD COLUMN IF NOT EXISTS keep_for DOUBLE PRECISION NULL;

-- The latest failed try of a job, measured in its worker (gc-error shows it). Nullable columns
-- without a default: catalog changes only, the table is not rewritten.
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS last_worker VARCHAR(128) NULL;
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS last_started_at TIMESTAMPTZ NULL;
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS last_wall_seconds DOUBLE PRECISION NULL;
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS last_cpu_seconds DOUBLE PRECISION NULL;
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS last_memory_peak_bytes BIGINT NULL;
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS last_memory_growth_bytes BIGINT NULL;
