-- Cron schedules (batchq.jobs.schedules), by name. Times travel between Python and SQL as whole
-- seconds since the epoch, UTC (slots are whole seconds); stored as DATETIME(6) and compared
-- with UTC_TIMESTAMP(6), the server's clock, whatever the session's time zone.

-- name: schedule_server_now
-- The server's clock, in seconds since the epoch: a new or resumed schedule's first slot follows it.
SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01', UTC_TIMESTAMP(6)) / 1000000 AS now;

-- name: schedules_due
-- Enabled schedules whose next slot has come, with the server's clock read in the same statement.
SELECT name, cron, tz, task, payload, serializer, queue, priority, max_errors, catch_up, catch_up_limit,
       TIMESTAMPDIFF(SECOND, '1970-01-01', next_exec) AS next_exec,
       TIMESTAMPDIFF(MICROSECOND, '1970-01-01', UTC_TIMESTAMP(6)) / 1000000 AS now
FROM batchq_schedule
WHERE enabled = 1 AND next_exec <= UTC_TIMESTAMP(6)
ORDER BY next_exec, name;

-- name: schedule_advance
-- The compare-and-set: move next_exec on only if it is still the slot this ticker saw (1 row:
-- this ticker enqueues the slot's jobs in the same transaction; 0: another ticker did). Compared
-- as schedules_due read it, whole seconds: a next_exec set by hand with fractional seconds is
-- still the slot seen, and one advanced is another second.
UPDATE batchq_schedule
SET next_exec = TIMESTAMP'1970-01-01 00:00:00' + INTERVAL %(next_exec)s SECOND, exec_by = %(exec_by)s
WHERE name = %(name)s AND enabled = 1
  AND TIMESTAMPDIFF(SECOND, '1970-01-01', next_exec) = %(seen)s;

-- name: schedule_ran
-- Record the last job a tick enqueued (in the transaction that advanced next_exec).
UPDATE batchq_schedule
SET last_slot = TIMESTAMP'1970-01-01 00:00:00' + INTERVAL %(slot)s SECOND, last_run_at = UTC_TIMESTAMP(6),
    last_job_id = %(job_id)s
WHERE name = %(name)s;

-- name: schedule_upsert
-- Create a schedule, or update its definition; next_exec changes only with its cron or time zone
-- (next_exec is assigned first: MySQL's later assignments would see the new cron). Paused stays paused.
INSERT INTO batchq_schedule (name, cron, tz, task, payload, serializer, queue, priority, max_errors,
                             catch_up, catch_up_limit, enabled, next_exec, created_at, updated_at)
VALUES (%(name)s, %(cron)s, %(tz)s, %(task)s, %(payload)s, %(serializer)s, %(queue)s, %(priority)s,
        %(max_errors)s, %(catch_up)s, %(catch_up_limit)s, 1,
        TIMESTAMP'1970-01-01 00:00:00' + INTERVAL %(next_exec)s SECOND, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE
    next_exec = IF(cron = VALUES(cron) AND tz = VALUES(tz), next_exec, VALUES(next_exec)),
    cron = VALUES(cron), tz = VALUES(tz), task = VALUES(task), payload = VALUES(payload),
    serializer = VALUES(serializer), queue = VALUES(queue), priority = VALUES(priority),
    max_errors = VALUES(max_errors), catch_up = VALUES(catch_up), catch_up_limit = VALUES(catch_up_limit),
    updated_at = VALUES(updated_at);

-- name: schedules_all
-- Every schedule, by name, for `batchq schedule list` and sync.
SELECT name, cron, tz, task, payload, serializer, queue, priority, max_errors, catch_up, catch_up_limit,
       enabled, exec_by, last_job_id,
       TIMESTAMPDIFF(SECOND, '1970-01-01', next_exec) AS next_exec,
       TIMESTAMPDIFF(SECOND, '1970-01-01', last_slot) AS last_slot,
       TIMESTAMPDIFF(MICROSECOND, '1970-01-01', last_run_at) / 1000000 AS last_run_at
FROM batchq_schedule
ORDER BY name;

-- name: schedule_delete
-- Remove a schedule (jobs it enqueued stay).
DELETE FROM batchq_schedule WHERE name = %(name)s;

-- name: schedule_pause
-- Stop a schedule: tick leaves it alone until it is resumed.
UPDATE batchq_schedule SET enabled = 0, updated_at = UTC_TIMESTAMP(6) WHERE name = %(name)s;

-- name: schedule_resume
-- Start a paused schedule again from its next slot after now (slots passed while paused are skipped).
UPDATE batchq_schedule
SET enabled = 1, updated_at = UTC_TIMESTAMP(6),
    next_exec = TIMESTAMP'1970-01-01 00:00:00' + INTERVAL %(next_exec)s SECOND
WHERE name = %(name)s AND enabled = 0;
