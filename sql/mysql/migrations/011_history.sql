-- Job history and resource accounting (issue 12). batchq_history keeps the finished jobs of
-- queues that ask for it (batchq_queue.keep_for) or of workers run with --keep: one row per job,
-- keyed by the job's id, written in the same transaction as the job's DELETE (success) or its
-- last job_error (failure). finished_at orders `batchq history` and bounds `batchq prune`;
-- (queue, finished_at) serves a queue's history and the per-queue prune.
CREATE TABLE IF NOT EXISTS batchq_history (
    id                  BIGINT UNSIGNED NOT NULL,
    queue               VARCHAR(64)  NOT NULL,
    task                VARCHAR(255) NOT NULL,
    payload             MEDIUMBLOB   NULL,
    serializer          VARCHAR(16)  NOT NULL,
    outcome             ENUM('succeeded', 'failed') NOT NULL,
    attempts            INT UNSIGNED NOT NULL,
    worker              VARCHAR(128) NULL,
    enqueued_at         DATETIME(6)  NOT NULL,
    started_at          DATETIME(6)  NULL,
    finished_at         DATETIME(6)  NOT NULL,
    wall_seconds        DOUBLE       NULL,
    cpu_seconds         DOUBLE       NULL,
    memory_peak_bytes   BIGINT UNSIGNED NULL,
    memory_growth_bytes BIGINT UNSIGNED NULL,
    result              MEDIUMTEXT   NULL,
    result_note         VARCHAR(255) NULL,
    error               TEXT         NULL,
    PRIMARY KEY (id),
    KEY batchq_history_finished (finished_at),
    KEY batchq_history_queue (queue, finished_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- A queue's history is kept this many seconds (NULL: not kept unless a worker runs with --keep).
ALTER TABLE batchq_queue ADD COLUMN keep_for DOUBLE NULL;

-- The latest failed try of a job, measured in its worker (gc-error shows it): nullable columns
-- at the end, which MariaDB >= 10.3 and MySQL >= 8.0.29 add without copying the table.
ALTER TABLE batchq_job
    ADD COLUMN last_worker VARCHAR(128) NULL,
    ADD COLUMN last_started_at DATETIME(6) NULL,
    ADD COLUMN last_wall_seconds DOUBLE NULL,
    ADD COLUMN last_cpu_seconds DOUBLE NULL,
    ADD COLUMN last_memory_peak_bytes BIGINT UNSIGNED NULL,
    ADD COLUMN last_memory_growth_bytes BIGINT UNSIGNED NULL;
