-- Cron schedules (batchq.schedules): one row per schedule, after the seed's improved scheduler.
-- next_exec is the schedule's next slot (UTC, on the server's clock); `batchq tick` advances it
-- with one compare-and-set UPDATE in the same transaction as the INSERT of the slot's job, so
-- any number of hosts ticking at once enqueue each slot once. exec_by is the host:pid that last
-- advanced it; last_slot, last_run_at and last_job_id describe the last job it enqueued.
CREATE TABLE IF NOT EXISTS batchq_schedule (
    name           VARCHAR(128) NOT NULL,
    cron           VARCHAR(255) NOT NULL,
    tz             VARCHAR(64)  NOT NULL DEFAULT 'UTC',
    task           VARCHAR(255) NOT NULL,
    payload        MEDIUMBLOB   NULL,
    serializer     VARCHAR(16)  NOT NULL DEFAULT 'json',
    queue          VARCHAR(64)  NOT NULL DEFAULT 'default',
    priority       SMALLINT     NOT NULL DEFAULT 0,
    max_errors     SMALLINT UNSIGNED NOT NULL DEFAULT 10,
    catch_up       VARCHAR(8)   NOT NULL DEFAULT 'latest',
    catch_up_limit INT UNSIGNED NOT NULL DEFAULT 100,
    enabled        TINYINT(1)   NOT NULL DEFAULT 1,
    next_exec      DATETIME(6)  NOT NULL,
    exec_by        VARCHAR(128) NULL,
    last_slot      DATETIME(6)  NULL,
    last_run_at    DATETIME(6)  NULL,
    last_job_id    BIGINT UNSIGNED NULL,
    created_at     DATETIME(6)  NOT NULL,
    updated_at     DATETIME(6)  NOT NULL,
    PRIMARY KEY (name),
    -- tick reads the due schedules through it.
    KEY batchq_schedule_due (enabled, next_exec)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
