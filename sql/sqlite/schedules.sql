-- Cron schedules (batchq.jobs.schedules), by name. Times travel between Python and SQL as whole
-- seconds since the epoch, UTC (slots are whole seconds); stored as strftime() text, which
-- sorts as it compares, against 'now'.

-- name: schedule_server_now
-- The clock, in seconds since the epoch: a new or resumed schedule's first slot follows it.
SELECT (julianday('now') - 2440587.5) * 86400.0 AS now;

-- name: schedules_due
-- Enabled schedules whose next slot has come, with the clock read in the same statement. Times
-- compared as times, not as text: a next_exec set by hand may be in any form SQLite reads
-- ('2026-01-01 07:00:00', '...T07:00:00Z'); one that is no time at all (next_exec NULL here)
-- is due, for tick to report it.
SELECT name, cron, tz, task, payload, serializer, queue, priority, max_errors, catch_up, catch_up_limit,
       CAST(strftime('%s', next_exec) AS INTEGER) AS next_exec,
       (julianday('now') - 2440587.5) * 86400.0 AS now
FROM batchq_schedule
WHERE enabled = 1 AND coalesce(julianday(next_exec) <= julianday('now'), 1)
ORDER BY julianday(next_exec), name;

-- name: schedule_advance
-- The compare-and-set: move next_exec on only if it is still the slot this ticker saw (1 row:
-- this ticker enqueues the slot's jobs in the same transaction; 0: another ticker did). Compared
-- as schedules_due read it, whole seconds: a next_exec set by hand without (or with other)
-- fractional seconds is still the slot seen, and one advanced is another second.
UPDATE batchq_schedule
SET next_exec = strftime('%Y-%m-%d %H:%M:%f', :next_exec, 'unixepoch'), exec_by = :exec_by
WHERE name = :name AND enabled = 1 AND CAST(strftime('%s', next_exec) AS INTEGER) = :seen;

-- name: schedule_ran
-- Record the last job a tick enqueued (in the transaction that advanced next_exec).
UPDATE batchq_schedule
SET last_slot = strftime('%Y-%m-%d %H:%M:%f', :slot, 'unixepoch'),
    last_run_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), last_job_id = :job_id
WHERE name = :name;

-- name: schedule_upsert
-- Create a schedule, or update its definition; next_exec changes only with its cron or time
-- zone. Paused stays paused.
INSERT INTO batchq_schedule (name, cron, tz, task, payload, serializer, queue, priority, max_errors,
                             catch_up, catch_up_limit, enabled, next_exec, created_at, updated_at)
VALUES (:name, :cron, :tz, :task, :payload, :serializer, :queue, :priority, :max_errors, :catch_up,
        :catch_up_limit, 1, strftime('%Y-%m-%d %H:%M:%f', :next_exec, 'unixepoch'),
        strftime('%Y-%m-%d %H:%M:%f', 'now'), strftime('%Y-%m-%d %H:%M:%f', 'now'))
ON CONFLICT (name) DO UPDATE SET
    next_exec = CASE WHEN batchq_schedule.cron = excluded.cron AND batchq_schedule.tz = excluded.tz
                     THEN batchq_schedule.next_exec ELSE excluded.next_exec END,
    cron = excluded.cron, tz = excluded.tz, task = excluded.task, payload = excluded.payload,
    serializer = excluded.serializer, queue = excluded.queue, priority = excluded.priority,
    max_errors = excluded.max_errors, catch_up = excluded.catch_up, catch_up_limit = excluded.catch_up_limit,
    updated_at = excluded.updated_at;

-- name: schedules_all
-- Every schedule, by name, for `batchq schedule list` and sync.
SELECT name, cron, tz, task, payload, serializer, queue, priority, max_errors, catch_up, catch_up_limit,
       enabled, exec_by, last_job_id,
       CAST(strftime('%s', next_exec) AS INTEGER) AS next_exec,
       CAST(strftime('%s', last_slot) AS INTEGER) AS last_slot,
       (julianday(last_run_at) - 2440587.5) * 86400.0 AS last_run_at
FROM batchq_schedule
ORDER BY name;

-- name: schedule_delete
-- Remove a schedule (jobs it enqueued stay).
DELETE FROM batchq_schedule WHERE name = :name;

-- name: schedule_pause
-- Stop a schedule: tick leaves it alone until it is resumed.
UPDATE batchq_schedule SET enabled = 0, updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now') WHERE name = :name;

-- name: schedule_resume
-- Start a paused schedule again from its next slot after now (slots passed while paused are skipped).
UPDATE batchq_schedule
SET enabled = 1, updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    next_exec = strftime('%Y-%m-%d %H:%M:%f', :next_exec, 'unixepoch')
WHERE name = :name AND enabled = 0;
