-- Cron schedules (batchq.schedules): one row per schedule, after the seed's improved scheduler.
-- next_exec is the schedule's next slot (on the server's clock); `batchq tick` advances it with
-- one compare-and-set UPDATE in the same transaction as the INSERT of the slot's job, so any
-- number of hosts ticking at once enqueue each slot once. exec_by is the host:pid that last
-- advanced it; last_slot, last_run_at and last_job_id describe the last job it enqueued.
CREATE TABLE IF NOT EXISTS batchq_schedule (
    name           VARCHAR(128) PRIMARY KEY,
    cron           VARCHAR(255) NOT NULL,
    tz             VARCHAR(64)  NOT NULL DEFAULT 'UTC',
    task           VARCHAR(255) NOT NULL,
    payload        BYTEA        NULL,
    serializer     VARCHAR(16)  NOT NULL DEFAULT 'json',
    queue          VARCHAR(64)  NOT NULL DEFAULT 'default',
    priority       SMALLINT     NOT NULL DEFAULT 0,
    max_errors     INTEGER      NOT NULL DEFAULT 10 CHECK (max_errors BETWEEN 0 AND 65535),
    catch_up       VARCHAR(8)   NOT NULL DEFAULT 'latest' CHECK (catch_up IN ('latest', 'all', 'none')),
    catch_up_limit INTEGER      NOT NULL DEFAULT 100 CHECK (catch_up_limit > 0),
    enabled        BOOLEAN      NOT NULL DEFAULT TRUE,
    next_exec      TIMESTAMPTZ  NOT NULL,
    exec_by        VARCHAR(128) NULL,
    last_slot      TIMESTAMPTZ  NULL,
    last_run_at    TIMESTAMPTZ  NULL,
    last_job_id    BIGINT       NULL,
    created_at     TIMESTAMPTZ  NOT NULL,
    updated_at     TIMESTAMPTZ  NOT NULL
);

-- tick reads the due schedules through it.
CREATE INDEX IF NOT EXISTS batchq_schedule_due ON batchq_schedule (enabled, next_exec);
