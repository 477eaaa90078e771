-- Cron schedules (batchq.schedules): one row per schedule, after the seed's improved scheduler.
-- next_exec is the schedule's next slot (UTC text as strftime() writes it); `batchq tick`
-- advances it with one compare-and-set UPDATE in the same transaction as the INSERT of the
-- slot's job, so any number of processes ticking at once enqueue each slot once. exec_by is the
-- host:pid that last advanced it; last_slot, last_run_at and last_job_id describe its last job.
CREATE TABLE IF NOT EXISTS batchq_schedule (
    name           TEXT    PRIMARY KEY,
    cron           TEXT    NOT NULL,
    tz             TEXT    NOT NULL DEFAULT 'UTC',
    task           TEXT    NOT NULL,
    payload        BLOB    NULL,
    serializer     TEXT    NOT NULL DEFAULT 'json',
    queue          TEXT    NOT NULL DEFAULT 'default',
    priority       INTEGER NOT NULL DEFAULT 0,
    max_errors     INTEGER NOT NULL DEFAULT 10,
    catch_up       TEXT    NOT NULL DEFAULT 'latest' CHECK (catch_up IN ('latest', 'all', 'none')),
    catch_up_limit INTEGER NOT NULL DEFAULT 100,
    enabled        INTEGER NOT NULL DEFAULT 1,
    next_exec      TEXT    NOT NULL,
    exec_by        TEXT    NULL,
    last_slot      TEXT    NULL,
    last_run_at    TEXT    NULL,
    last_job_id    INTEGER NULL,
    created_at     TEXT    NOT NULL,
    updated_at     TEXT    NOT NULL
);

-- tick reads the due schedules through it.
CREATE INDEX IF NOT EXISTS batchq_schedule_due ON batchq_schedule (enabled, next_exec);
