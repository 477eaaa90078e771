-- The job table. Seed columns (status, processing_at, error_count, created_at) keep their names.
-- Times are UTC DATETIME(6), always written and compared with UTC_TIMESTAMP(6) (the server's clock).
CREATE TABLE IF NOT EXISTS batchq_job (
    id            BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    queue         VARCHAR(64)  NOT NULL DEFAULT 'default',
    task          VARCHAR(255) NOT NULL,
    payload       MEDIUMBLOB   NULL,
    serializer    VARCHAR(16)  NOT NULL DEFAULT 'json',
    priority      SMALLINT     NOT NULL DEFAULT 0,
    status        ENUM('ready', 'processing', 'failed') NOT NULL DEFAULT 'ready',
    run_at        DATETIME(6)  NOT NULL,
    processing_at DATETIME(6)  NULL,
    locked_by     VARCHAR(128) NULL,
    claim_token   CHAR(32)     NULL,
    error_count   SMALLINT UNSIGNED NOT NULL DEFAULT 0,
    max_errors    SMALLINT UNSIGNED NOT NULL DEFAULT 10,
    last_error    TEXT         NULL,
    created_at    DATETIME(6)  NOT NULL,
    PRIMARY KEY (id),
    -- The claim walks this index: due rows of a queue come before future-dated ones.
    KEY batchq_job_claim (queue, status, priority DESC, run_at, id),
    -- gc-processing and stats look at rows by status without touching the ready backlog.
    KEY batchq_job_status (status, processing_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS batchq_queue (
    name       VARCHAR(64) NOT NULL,
    paused     TINYINT(1)  NOT NULL DEFAULT 0,
    PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS batchq_schema (
    version    INT         NOT NULL,
    applied_at DATETIME(6) NOT NULL,
    PRIMARY KEY (version)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
