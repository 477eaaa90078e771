-- The worker registry (batchq.registry): one row per live `batchq run`, written when it starts,
-- refreshed about once a second (last_seen, its counts), deleted when it exits. A row whose
-- worker died stays until a sweep sees it gone (its liveness, as gc-processing asks) and prunes
-- it. stop_requested is set by `batchq stop`: the worker finishes the job at hand and exits.
-- The job a worker runs is not stored here (a write per job): it is the worker's 'processing'
-- row in batchq_job.
CREATE TABLE IF NOT EXISTS batchq_worker (
    name           VARCHAR(255)    NOT NULL,
    host           VARCHAR(255)    NOT NULL,
    pid            INT             NOT NULL,
    kind           VARCHAR(16)     NOT NULL DEFAULT 'run',
    serves         VARCHAR(2000)   NOT NULL,
    started_at     DATETIME(6)     NOT NULL,
    last_seen      DATETIME(6)     NOT NULL,
    jobs_done      BIGINT UNSIGNED NOT NULL DEFAULT 0,
    jobs_failed    BIGINT UNSIGNED NOT NULL DEFAULT 0,
    stop_requested TINYINT(1)      NOT NULL DEFAULT 0,
    PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
