-- Cron schedules (batchq.jobs.schedules), by name. Times travel between Python and SQL as whole
-- seconds since the epoch (slots are whole seconds); stored as timestamptz and compared with
-- statement_timestamp(), the server's clock.

-- name: schedule_server_now
-- The server's clock, in seconds since the epoch: a new or resumed schedule's first slot follows it.
SELECT extract(epoch FROM statement_timestamp())::float8 AS now;

-- name: schedules_due
-- Enabled schedules whose next slot has come, with the server's clock read in the same statement.
SELECT name, cron, tz, task, payload, serializer, queue, priority, max_errors, catch_up, catch_up_limit,
       CASE WHEN isfinite(next_exec) THEN floor(extract(epoch FROM next_exec))::bigint END AS next_exec,
       extract(epoch FROM statement_timestamp())::float8 AS now
FROM batchq_schedule
WHERE enabled AND next_exec <= statement_timestamp()
ORDER BY next_exec, name;

-- name: schedule_advance
-- The compare-and-set: move next_exec on only if it is still the slot this ticker saw (1 row:
-- this ticker enqueues the slot's jobs in the same transaction; 0: another ticker did). Compared
-- as schedules_due read it, whole seconds: a next_exec set by hand with fractional seconds is
-- still the slot seen, and one advanced is another second.
UPDATE batchq_schedule
SET next_exec = to_timestamp(%(next_exec)s::float8), exec_by = %(exec_by)s
WHERE name = %(name)s AND enabled AND floor(extract(epoch FROM next_exec)) = %(seen)s;

-- name: schedule_ran
-- Record the last job a tick enqueued (in the transaction that advanced next_exec).
UPDATE batchq_schedule
SET last_slot = to_timestamp(%(slot)s::float8), last_run_at = statement_timestamp(), last_job_id = %(job_id)s
WHERE name = %(name)s;

-- name: schedule_upsert
-- Create a schedule, or update its definition; next_exec changes only with its cron or time
-- zone. Paused stays paused.
INSERT INTO batchq_schedule (name, cron, tz, task, payload, serializer, queue, priority, max_errors,
                             catch_up, catch_up_limit, enabled, next_exec, created_at, updated_at)
VALUES (%(name)s, %(cron)s, %(tz)s, %(task)s, %(payload)s, %(serializer)s, %(queue)s, %(priority)s,
        %(max_errors)s, %(catch_up)s, %(catch_up_limit)s, TRUE, to_timestamp(%(next_exec)s::float8),
        statement_timestamp(), statement_timestamp())
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
       CASE WHEN isfinite(next_exec) THEN floor(extract(epoch FROM next_exec))::bigint END AS next_exec,
       CASE WHEN isfinite(last_slot) THEN floor(extract(epoch FROM last_slot))::bigint END AS last_slot,
       CASE WHEN isfinite(last_run_at) THEN extract(epoch FROM last_run_at)::float8 END AS last_run_at
FROM batchq_schedule
ORDER BY name;

-- name: schedule_delete
-- Remove a schedule (jobs it enqueued stay).
DELETE FROM batchq_schedule WHERE name = %(name)s;

-- name: schedule_pause
-- Stop a schedule: tick leaves it alone until it is resumed.
UPDATE batchq_schedule SET enabled = FALSE, updated_at = statement_timestamp() WHERE name = %(name)s;

-- name: schedule_resume
-- Start a paused schedule again from its next slot after now (slots passed while paused are skipped).
UPDATE batchq_schedule
SET enabled = TRUE, updated_at = statement_timestamp(), next_exec = to_timestamp(%(next_exec)s::float8)
WHERE name = %(name)s AND NOT enabled;
