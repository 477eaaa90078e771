-- The job table's statements on MySQL/MariaDB (batchq.stores.jobs), by name (PyMySQL paramstyle).
-- Times are UTC DATETIME(6) compared with UTC_TIMESTAMP(6): the server's clock, whatever
-- the session time zone (enqueue may run on the application's own connection).

-- name: enqueue
-- One job, due after `delay` seconds on the server's clock, or at `at` (Unix seconds, from an aware
-- datetime; the later of it and now): 'ready' when due now, else
-- 'scheduled' until a worker promotes it (jobs_promote).
-- Its claim partition is a random one of %(partitions)s (batchq.coordination.partitions; 1 when none are set up).
-- Its expiry: %(expires)s seconds from now, or the instant %(expires_at)s (Unix seconds), or NULL.
INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at, max_errors, created_at,
                        concurrency_key, concurrency_limit, claim_partition, timeout_seconds, task_version,
                        backoff, keep_result, expires_at, trace_context, rate_key,
                        rate_limit, rate_period)
VALUES (%(queue)s, %(task)s, %(payload)s, %(serializer)s, %(priority)s,
        CASE WHEN %(concurrency_key)s IS NOT NULL THEN 'blocked'
             WHEN %(delay)s > 0 OR TIMESTAMP '1970-01-01 00:00:00' + INTERVAL ROUND(%(at)s * 1000000) MICROSECOND
                  > UTC_TIMESTAMP(6) THEN 'scheduled' ELSE 'ready' END,
        GREATEST(UTC_TIMESTAMP(6) + INTERVAL ROUND(%(delay)s * 1000000) MICROSECOND,
                 COALESCE(TIMESTAMP '1970-01-01 00:00:00' + INTERVAL ROUND(%(at)s * 1000000) MICROSECOND,
                          UTC_TIMESTAMP(6))), %(max_errors)s,
        UTC_TIMESTAMP(6), %(concurrency_key)s, %(concurrency_limit)s, FLOOR(RAND() * %(partitions)s), %(timeout)s, %(task_version)s, %(backoff)s, %(keep_result)s,
        COALESCE(TIMESTAMP '1970-01-01 00:00:00' + INTERVAL ROUND(%(expires_at)s * 1000000) MICROSECOND,
                 UTC_TIMESTAMP(6) + INTERVAL ROUND(%(expires)s * 1000000) MICROSECOND), %(trace_context)s,
        %(rate_key)s, %(rate_limit)s, %(rate_period)s);

-- name: enqueue_now
-- enqueue for the job most producers send: due now, with no concurrency key, expiry, per-key rate
-- or partitions (batchq.stores.jobs.enqueue_statement picks it). The row enqueue would write for
-- it, without enqueue's per-row CASE and date arithmetic on NULL options: on MariaDB those cost
-- as much as the row's insert itself (bench/insert_cost.py).
INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at, max_errors, created_at,
                        timeout_seconds, task_version, backoff, keep_result, trace_context)
VALUES (%(queue)s, %(task)s, %(payload)s, %(serializer)s, %(priority)s, 'ready', UTC_TIMESTAMP(6),
        %(max_errors)s, UTC_TIMESTAMP(6), %(timeout)s, %(task_version)s, %(backoff)s, %(keep_result)s,
        %(trace_context)s);

-- name: enqueue_unique
-- enqueue with a unique_key: writes nothing (0 rows, no error) while a job of that key is waiting
-- or running (the UNIQUE index batchq_job_unique). IGNORE would also let a value too long for
-- its column through as a warning: every value is checked before it is sent (Queue.job_template).
INSERT IGNORE INTO batchq_job (queue, task, payload, serializer, priority, status, run_at, max_errors,
                               created_at, concurrency_key, concurrency_limit, unique_key, claim_partition, timeout_seconds,
                        task_version, backoff, keep_result, expires_at, trace_context, rate_key,
                        rate_limit, rate_period)
VALUES (%(queue)s, %(task)s, %(payload)s, %(serializer)s, %(priority)s,
        CASE WHEN %(concurrency_key)s IS NOT NULL THEN 'blocked'
             WHEN %(delay)s > 0 OR TIMESTAMP '1970-01-01 00:00:00' + INTERVAL ROUND(%(at)s * 1000000) MICROSECOND
                  > UTC_TIMESTAMP(6) THEN 'scheduled' ELSE 'ready' END,
        GREATEST(UTC_TIMESTAMP(6) + INTERVAL ROUND(%(delay)s * 1000000) MICROSECOND,
                 COALESCE(TIMESTAMP '1970-01-01 00:00:00' + INTERVAL ROUND(%(at)s * 1000000) MICROSECOND,
                          UTC_TIMESTAMP(6))), %(max_errors)s,
        UTC_TIMESTAMP(6), %(concurrency_key)s, %(concurrency_limit)s, %(unique_key)s,
        FLOOR(RAND() * %(partitions)s), %(timeout)s, %(task_version)s, %(backoff)s, %(keep_result)s,
        COALESCE(TIMESTAMP '1970-01-01 00:00:00' + INTERVAL ROUND(%(expires_at)s * 1000000) MICROSECOND,
                 UTC_TIMESTAMP(6) + INTERVAL ROUND(%(expires)s * 1000000) MICROSECOND), %(trace_context)s,
        %(rate_key)s, %(rate_limit)s, %(rate_period)s);

-- name: job_unique_holder
-- The job holding a unique key (waiting or running), if any. A locking read: it sees the latest
-- committed row even inside an application's REPEATABLE READ transaction (enqueue(conn=...)),
-- whose snapshot may predate the job the INSERT collided with.
SELECT id FROM batchq_job
WHERE unique_key_held = CAST(%(unique_key)s AS BINARY)
LOCK IN SHARE MODE;

-- name: jobs_promote
-- Scheduled jobs whose time has come become ready (walks batchq_job_due), a bounded number per
-- statement; workers run it about once a second and whenever a claim finds nothing.
UPDATE batchq_job SET status = 'ready'
WHERE status = 'scheduled' AND run_at <= UTC_TIMESTAMP(6)
ORDER BY run_at
LIMIT 1000;

-- name: jobs_expired_any
-- Is any waiting job past its expiry? The tick's cheap look (a range of batchq_job_expiry that
-- starts past the NULLs: nothing to read when no job has an expiry) before it takes any lock.
SELECT id FROM batchq_job
WHERE expires_at <= UTC_TIMESTAMP(6) AND status IN ('ready', 'scheduled', 'blocked')
LIMIT 1;

-- name: jobs_expiring
-- Waiting jobs past their expiry, a bounded number, locked until jobs_expire fails them in the
-- same transaction. SKIP LOCKED: a row a claim holds is left to that claim, which took it only
-- if it had not expired by the claim's SELECT (jobs_claim), so it counts as started; a claim
-- arriving after this lock skips the row, and finds it failed if it comes back.
SELECT id FROM batchq_job
WHERE expires_at <= UTC_TIMESTAMP(6) AND status IN ('ready', 'scheduled', 'blocked')
ORDER BY expires_at
LIMIT 1000
FOR UPDATE SKIP LOCKED;

-- name: jobs_expiring_waiting
-- jobs_expiring for servers without SKIP LOCKED: waits for a claim holding a row to commit,
-- then reads it as the claim left it (claimed: no longer waiting, not failed).
SELECT id FROM batchq_job
WHERE expires_at <= UTC_TIMESTAMP(6) AND status IN ('ready', 'scheduled', 'blocked')
ORDER BY expires_at
LIMIT 1000
FOR UPDATE;

-- name: jobs_expire
-- Fail the jobs jobs_expiring locked, for good, without a try: reason 'expired', the error
-- class batchq.errors.JobExpired, one failure group (fingerprint) for all. Tries already made
-- (error_count) stay as counted.
UPDATE batchq_job
SET status = 'failed', last_error = 'expired', error_class = %(error_class)s,
    error_fingerprint = %(fingerprint)s, last_error_at = UTC_TIMESTAMP(6)
WHERE id IN %(ids)s AND status IN ('ready', 'scheduled', 'blocked');

-- name: jobs_keep_expired
-- After jobs_expire, in its transaction: the expired jobs whose history is kept (their own
-- keep_result, their queue's keep_for, or `run --keep`: %(keep_all)s) go into batchq_history
-- as failed, as job_keep_failed copies a job out of tries.
{{history_copy_failed}}
WHERE id IN %(ids)s AND status = 'failed'
  AND (%(keep_all)s <> 0 OR keep_result IS NOT NULL
       OR queue IN (SELECT name FROM batchq_queue WHERE keep_for IS NOT NULL));

-- name: jobs_unblock_lock
-- One unblocker at a time per database; the others skip (the holder admits for them).
SELECT GET_LOCK(CONCAT('batchq unblock ', DATABASE()), 0) AS locked;

-- name: jobs_unblockable
-- Jobs waiting for a concurrency slot ('blocked', due) that may become ready: while fewer than
-- their concurrency_limit jobs of their key are 'ready' or 'processing', best first as a claim
-- takes them. Read inside jobs_unblock_lock, which lets one worker at a time admit, so two
-- never fill the same free slot; only jobs_unblock makes a keyed job ready. A plain read (no
-- row locks): a claim or a finish holding a row never makes it wait. A row written by hand
-- without a limit gets 1.
SELECT waiting.id FROM (
    SELECT b.id, b.concurrency_key, coalesce(b.concurrency_limit, 1) AS slots,
           ROW_NUMBER() OVER (PARTITION BY b.concurrency_key
                              ORDER BY b.priority DESC, b.run_at, b.id) AS place,
           (SELECT COUNT(*) FROM batchq_job a
            WHERE a.concurrency_key = b.concurrency_key
              AND a.status IN ('ready', 'processing')) AS active
    FROM batchq_job b
    WHERE b.status = 'blocked' AND b.run_at <= UTC_TIMESTAMP(6)
) AS waiting
WHERE waiting.place <= waiting.slots - waiting.active OR waiting.concurrency_key IS NULL;

-- name: jobs_unblock
-- Admit the jobs jobs_unblockable found (one that was cancelled meanwhile stays gone).
UPDATE batchq_job SET status = 'ready' WHERE id IN %(ids)s AND status = 'blocked';

-- name: jobs_unblock_unlock
-- After the commit: the next unblocker must see what this one admitted.
SELECT RELEASE_LOCK(CONCAT('batchq unblock ', DATABASE())) AS released;

-- name: jobs_claim
-- A worker's one round trip per job: open the transaction, delete the jobs it finished (fenced
-- by their claim's token; ids (NULL) when there are none), and lock the next due jobs of a
-- queue that no other claimer holds: the first rows of batchq_job_claim, every 'ready' row
-- being due (run_at <= now only turns away a ready row written by hand with a future time).
-- jobs_claim_mark then marks them and commits. Sent as one multi-statement query. A row past its
-- expiry (expires_at, NULL for most) is never handed out: this SELECT before it has started the
-- job; the workers' tick fails it (jobs_expiring, jobs_expire). Every claim below does the same.
-- The claim's transaction alone runs in REPEATABLE READ (the session stays READ COMMITTED):
-- InnoDB's locking scan steps over the entries earlier claims left behind (delete-marked
-- until purged) about 3x faster in RR; measured on MariaDB 10.11, draining 20,000 jobs 100
-- at a time, the SELECT took 69 us per job in RR and 235 in RC. Its gap locks only make an
-- enqueue into the locked stretch wait for this short transaction.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
START TRANSACTION;
{{finished_delete}}
{{claim_pick}}
FOR UPDATE SKIP LOCKED;

-- name: jobs_claim_keep
-- jobs_claim when finished jobs are to be kept (history): the same, with the finished jobs copied
-- into batchq_history before their DELETE, fenced by the same token, in the same transaction (in
-- its REPEATABLE READ the INSERT ... SELECT reads the rows locked, as the DELETE then finds them;
-- `j.id IN` makes it primary-key lookups). Their measurements come as one JSON array %(kept)s
-- of arrays [id, wall ns, CPU us, peak, growth(, result, note)] (batchq.jobs.history.kept_entry). REPLACE: a job id used again (a TRUNCATE of
-- batchq_job restarts the ids) replaces the older record rather than failing the claim. Needs
-- JSON_TABLE (MySQL >= 8.0.4, MariaDB >= 10.6).
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
START TRANSACTION;
{{keep_from_json}}
{{finished_delete}}
{{claim_pick}}
FOR UPDATE SKIP LOCKED;

-- name: jobs_claim_keep_one
-- jobs_claim_keep when one finished job is kept, as in every single-job claim that keeps history:
-- its figures come as plain parameters (wall time in ns, CPU time in us), so the copy is a
-- primary-key INSERT ... SELECT, with no JSON_TABLE to parse, plan and join.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
START TRANSACTION;
{{history_replace_succeeded}}
SELECT j.id, j.queue, j.task, j.payload, j.serializer, 'succeeded', j.error_count + 1, j.locked_by,
       j.created_at, j.processing_at, UTC_TIMESTAMP(6), %(wall_ns)s / 1e9, %(cpu_us)s / 1e6, %(peak)s,
       %(growth)s, %(result)s, %(note)s, UTC_TIMESTAMP(6) + INTERVAL ROUND(j.keep_result * 1000000) MICROSECOND
FROM batchq_job j
WHERE j.id = %(kept_id)s AND j.claim_token = %(done_token)s;
{{finished_delete}}
{{claim_pick}}
FOR UPDATE SKIP LOCKED;

-- name: jobs_claim_waiting
-- jobs_claim for servers without SKIP LOCKED (MySQL < 8.0.1, MariaDB < 10.6): correct, but
-- claimers wait for each other.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
START TRANSACTION;
{{finished_delete}}
{{claim_pick}}
FOR UPDATE;

-- name: jobs_claim_partition
-- jobs_claim within one partition that the worker leases (run --claim partition), through
-- batchq_job_partition. In the session's READ COMMITTED, not jobs_claim's REPEATABLE READ: a
-- partition with fewer due jobs than the limit would take a next-key lock on the first row
-- past it, which is another partition's. jobs_claim_mark follows, as after jobs_claim.
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
START TRANSACTION;
{{finished_delete}}
{{claim_pick_partition}}
FOR UPDATE SKIP LOCKED;

-- name: jobs_claim_partition_waiting
-- jobs_claim_partition for servers without SKIP LOCKED, where partitions matter most: a worker
-- waits only for claimers of its own partition (a lease that ran out, a row claimer).
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
START TRANSACTION;
{{finished_delete}}
{{claim_pick_partition}}
FOR UPDATE;

-- name: jobs_claim_mark
-- The second half of jobs_claim: mark the locked jobs ours, with a fresh token that fences every
-- later write, and commit (ids (NULL) when nothing was claimed: the deletes still commit).
{{claim_mark}}
COMMIT;

-- name: jobs_claim_mark_checked
-- jobs_claim_mark on a Galera node, then, in the same round trip, what the commit left: how many
-- rows carry our new token, and how many of the finished jobs are still there. Measured on
-- MariaDB 10.11 + galera 26.4: now and then a claim whose transaction a replicated write
-- aborted between its UPDATE and its COMMIT was answered with success although nothing of it
-- had committed; the worker then ran a job another node's worker had claimed (4 in 10,000).
-- The claim checks both counts and, if the transaction is not there, retries it.
{{claim_mark}}
COMMIT;
SELECT (SELECT COUNT(*) FROM batchq_job WHERE claim_token = %(token)s) AS marked,
       (SELECT COUNT(*) FROM batchq_job
        WHERE claim_token = %(done_token)s AND id IN %(done_ids)s AND dependants = 0) AS undeleted;

-- name: jobs_claim_mark_none_checked
-- The COMMIT of a claim that found no job, on a Galera node, and whether the finished jobs it
-- deleted are gone (as jobs_claim_mark_checked checks).
COMMIT;
SELECT COUNT(*) AS undeleted FROM batchq_job WHERE claim_token = %(done_token)s AND id IN %(done_ids)s AND dependants = 0;

-- name: jobs_delete
-- Success, when no claim follows (the worker's last jobs): delete them, fenced by their token.
DELETE FROM batchq_job WHERE claim_token = %(token)s AND id IN %(ids)s AND dependants = 0;

-- name: jobs_keep
-- The finished jobs to keep, copied into batchq_history as jobs_delete_keep copies them, inside a
-- transaction already open (a job finished in its own: batchq.jobs.calls.FinishInTransaction);
-- jobs_delete follows in it.
{{keep_from_json}}

-- name: jobs_delete_keep
-- jobs_delete when the finished jobs are to be kept: copied into batchq_history (as in
-- jobs_claim_keep), then deleted, in one transaction, one round trip.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
START TRANSACTION;
{{keep_from_json}}
{{finished_delete}}
COMMIT;

-- name: jobs_release
-- Claimed jobs the worker will not run (it was told to stop mid-batch) go back, uncounted.
UPDATE batchq_job
SET status = 'ready', processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE claim_token = %(token)s AND id IN %(ids)s;

-- name: job_claim_held
-- A job's transaction (batchq.job_transaction), as it begins: is the job still this worker's
-- claim? A plain read, no row lock: a sweep never waits for a task.
SELECT 1 AS held FROM batchq_job WHERE id = %(id)s AND claim_token = %(token)s;

-- name: job_error
-- Failure: count it (up to 65535, the column's top); retry after `delay` seconds, or fail for
-- good once out of tries.
-- status is assigned first: MySQL evaluates SET left to right with updated values.
UPDATE batchq_job
SET status = CASE WHEN error_count + 1 >= max_errors THEN 'failed'
                  WHEN %(delay)s > 0 AND concurrency_key IS NOT NULL THEN 'blocked'
                  WHEN %(delay)s > 0 THEN 'scheduled' ELSE 'ready' END,
    error_count = CASE WHEN error_count < 65535 THEN error_count + 1 ELSE error_count END,
    last_error = %(error)s, error_class = %(error_class)s, error_fingerprint = %(fingerprint)s, last_error_at = UTC_TIMESTAMP(6),
    run_at = UTC_TIMESTAMP(6) + INTERVAL ROUND(%(delay)s * 1000000) MICROSECOND,
    last_worker = locked_by, last_started_at = processing_at, last_wall_seconds = %(wall)s,
    last_cpu_seconds = %(cpu)s, last_memory_peak_bytes = %(peak)s, last_memory_growth_bytes = %(growth)s,
    processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE id = %(id)s AND claim_token = %(token)s;

-- name: job_keep_failed
-- After job_error, in its transaction, for a job whose history is kept: if that failure was its
-- last try, copy it into batchq_history as failed, with that try's measurements and error.
{{history_copy_failed}}
WHERE id = %(id)s AND status = 'failed';

-- name: job_wait_for_version
-- The job's task version is newer than this worker knows: put it back uncounted, for a worker
-- that knows it, with who put it back (version_wait, for explain and stats). It waits a tenth
-- of its age, from min_delay to max_delay seconds, times spread (1 to 1.5, drawn by the worker,
-- so that jobs put back together come due one by one, each a fresh chance for a new worker):
-- no worker claims it again at once, and a job stuck behind outdated workers costs them a
-- claim a minute or so. A job with a concurrency key gives its slot back and waits for one again.
UPDATE batchq_job
SET status = CASE WHEN concurrency_key IS NOT NULL THEN 'blocked' ELSE 'scheduled' END,
    run_at = UTC_TIMESTAMP(6) + INTERVAL ROUND(1000000 * %(spread)s * LEAST(%(max_delay)s, GREATEST(%(min_delay)s,
        COALESCE(TIMESTAMPDIFF(MICROSECOND, created_at, UTC_TIMESTAMP(6)) / 1e7, 0)))) MICROSECOND,
    version_wait = %(note)s, processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE id = %(id)s AND claim_token = %(token)s;

-- name: jobs_release_unknown
-- After a reconnect, between jobs: a claim whose commit we never saw goes back, uncounted. By
-- its token: the other lanes of a `run --concurrency` process hold claims under the same name.
UPDATE batchq_job
SET status = 'ready', processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE status = 'processing' AND BINARY locked_by = %(worker)s AND claim_token IN %(tokens)s;

-- name: job_cancel
-- Remove a job nobody is running; a claimed job stays.
DELETE FROM batchq_job WHERE id = %(id)s AND status IN ('ready', 'scheduled', 'blocked', 'failed');

-- name: jobs_cancel_where
-- Up to %(batch)s waiting jobs of a queue (of one task when given, enqueued at least
-- %(older_than)s seconds ago), never a claimed or a failed one: one bounded batch per statement,
-- so a large cancel never holds many locks for long. Walks batchq_job_claim's queue prefix.
DELETE FROM batchq_job
WHERE queue = %(queue)s AND status IN ('ready', 'scheduled', 'blocked')
  AND (%(task)s IS NULL OR task = %(task)s)
  AND created_at <= UTC_TIMESTAMP(6) - INTERVAL ROUND(%(older_than)s * 1000000) MICROSECOND
LIMIT %(batch)s;

-- name: queue_stats
-- Per queue and status: counts, due counts, the oldest processing age in seconds, and how many
-- jobs an outdated worker put back for a newer task version (version_wait).
SELECT queue, status, COUNT(*) AS jobs,
       SUM(run_at <= UTC_TIMESTAMP(6)) AS due,
       TIMESTAMPDIFF(MICROSECOND, MIN(processing_at), UTC_TIMESTAMP(6)) / 1e6 AS oldest_seconds,
       SUM(version_wait IS NOT NULL) AS version_waits
FROM batchq_job
GROUP BY queue, status;

-- name: jobs_processing
-- Every claimed job with its owner and age on the server's clock.
SELECT id, queue, task, locked_by, claim_token, error_count, max_errors,
       TIMESTAMPDIFF(MICROSECOND, processing_at, UTC_TIMESTAMP(6)) / 1e6 AS age_seconds
FROM batchq_job
WHERE status = 'processing'
ORDER BY processing_at, id;

-- name: job_requeue_abandoned
-- A dead worker's job goes back at once, counted as an error (a poison job ends failed).
-- The count stops at 65535, the column's top, and the token compares NULL-safely: a row
-- written by hand with either is put back like any other, never stuck.
UPDATE batchq_job
SET status = CASE WHEN error_count + 1 >= max_errors THEN 'failed' ELSE 'ready' END,
    error_count = CASE WHEN error_count < 65535 THEN error_count + 1 ELSE error_count END,
    last_error = %(error)s, error_class = NULL, error_fingerprint = %(fingerprint)s, last_error_at = UTC_TIMESTAMP(6),
    run_at = UTC_TIMESTAMP(6),
    processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE id = %(id)s AND status = 'processing' AND claim_token <=> %(token)s;

-- name: jobs_unrunnable
-- Rows no worker will ever claim, for a human: a status outside the ENUM (stored as '' by a
-- session without strict mode). SMALLINT keeps every priority claimable. Walks batchq_job_due.
SELECT id, queue, task, status, priority
FROM batchq_job
WHERE status NOT IN ('ready', 'processing', 'failed', 'scheduled', 'blocked')
ORDER BY id;

-- name: jobs_failed
-- Jobs out of tries, for a human.
SELECT id, queue, task, error_count, max_errors, last_error, created_at, concurrency_key,
       error_fingerprint, last_error_at, unique_key, last_worker, last_started_at, last_wall_seconds,
       last_cpu_seconds, last_memory_peak_bytes, last_memory_growth_bytes
FROM batchq_job
WHERE status = 'failed'
ORDER BY id;

-- name: job_run_now
-- A delayed job (scheduled: a delay or a retry backoff) made due now; any other state is left, and so
-- is a job waiting for its parents (batchq.jobs.dependencies).
UPDATE batchq_job SET status = 'ready', run_at = UTC_TIMESTAMP(6)
WHERE id = %(id)s AND status = 'scheduled' AND coalesce(parents_left, 0) = 0;

-- name: job_failed_one
-- One failed job as jobs_failed lists it, by its primary key: the dashboard's "retry now"
-- requeues it without reading every failed job (jobs_failed took a second with 50,000 failed).
SELECT id, queue, task, error_count, max_errors, last_error, created_at, concurrency_key,
       error_fingerprint, last_error_at, unique_key, last_worker, last_started_at, last_wall_seconds,
       last_cpu_seconds, last_memory_peak_bytes, last_memory_growth_bytes
FROM batchq_job
WHERE id = %(id)s AND status = 'failed';

-- name: job_requeue_failed
-- Give a failed job a fresh set of tries, due now (a job with a concurrency key waits for a slot);
-- a job that still has unfinished parents (batchq.jobs.dependencies) waits for them again. Its
-- snoozes start again from 0 too (batchq.jobs.control: a job failed for snoozing too often).
UPDATE batchq_job
SET status = CASE WHEN EXISTS (SELECT 1 FROM batchq_dependency d WHERE d.child_id = batchq_job.id) THEN 'scheduled'
                  WHEN concurrency_key IS NULL THEN 'ready' ELSE 'blocked' END,
    run_at = CASE WHEN EXISTS (SELECT 1 FROM batchq_dependency d WHERE d.child_id = batchq_job.id) THEN '9999-12-31 00:00:00' ELSE UTC_TIMESTAMP(6) END,
    parents_left = CASE WHEN parents_left IS NULL THEN NULL
                        ELSE (SELECT COUNT(*) FROM batchq_dependency d WHERE d.child_id = batchq_job.id) END,
    error_count = 0, snoozes = 0
WHERE id = %(id)s AND status = 'failed';

-- name: job_delete_failed
-- Drop a failed job.
DELETE FROM batchq_job WHERE id = %(id)s AND status = 'failed';

-- name: queue_set_paused
-- Pause or resume a queue.
INSERT INTO batchq_queue (name, paused) VALUES (%(queue)s, %(paused)s)
ON DUPLICATE KEY UPDATE paused = VALUES(paused);

-- name: queue_set_keep_for
-- Keep a queue's finished jobs in batchq_history for keep_for seconds (NULL: stop keeping them).
INSERT INTO batchq_queue (name, paused, keep_for) VALUES (%(queue)s, 0, %(keep_for)s)
ON DUPLICATE KEY UPDATE keep_for = VALUES(keep_for);

-- name: queues_keep_for
-- The queues whose finished jobs are kept, and for how many seconds.
SELECT name, keep_for FROM batchq_queue WHERE keep_for IS NOT NULL ORDER BY name;

-- name: queues_paused
-- Names of paused queues.
SELECT name FROM batchq_queue WHERE paused = 1 ORDER BY name;

-- name: queue_exists
-- Clean-up paths: does a job queue of this name exist (jobs, or its settings row)? A name that
-- today's rules refuse, written by plain SQL, may still be cleared when it does.
SELECT (EXISTS (SELECT 1 FROM batchq_job WHERE queue = %(queue)s)
        OR EXISTS (SELECT 1 FROM batchq_queue WHERE name = %(queue)s)) AS present;

-- name: queue_purge
-- Delete a queue's jobs that nobody is running.
DELETE FROM batchq_job WHERE queue = %(queue)s AND status IN ('ready', 'scheduled', 'blocked', 'failed');

-- name: queue_schema
-- A job queue's type (payload_schema, NULL: untyped or no row).
SELECT payload_schema FROM batchq_queue WHERE name = %(queue)s;

-- name: queue_set_schema
-- Declare or change a job queue's type (NULL: untyped).
INSERT INTO batchq_queue (name, paused, payload_schema) VALUES (%(queue)s, 0, %(schema)s)
ON DUPLICATE KEY UPDATE payload_schema = VALUES(payload_schema);

-- name: queue_waiting_payloads
-- A page of a queue's waiting jobs (ready, delayed, blocked) by id, for alter_queue to check against a new type.
SELECT id, payload, serializer FROM batchq_job
WHERE queue = %(queue)s AND status IN ('ready', 'scheduled', 'blocked') AND id > %(after)s
ORDER BY id LIMIT %(limit)s;

-- name: job_fail_invalid
-- A claimed job whose payload does not match its queue's type: failed at once, counted, with the reason.
UPDATE batchq_job
SET status = 'failed',
    error_count = CASE WHEN error_count < 65535 THEN error_count + 1 ELSE error_count END,
    last_error = %(error)s, error_class = NULL, error_fingerprint = %(fingerprint)s, last_error_at = UTC_TIMESTAMP(6),
    last_worker = locked_by, last_started_at = processing_at,
    processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE id = %(id)s AND claim_token = %(token)s;

-- part: finished_delete
-- The jobs a worker finished, fenced by their claim's token; a parent whose dependants are not
-- yet released stays (batchq.jobs.dependencies releases them, then deletes it).
DELETE FROM batchq_job WHERE claim_token = %(done_token)s AND id IN %(done_ids)s AND dependants = 0;

-- part: claimed_columns
-- What a claim returns of each job it takes.
SELECT id, queue, task, payload, serializer, priority, error_count, max_errors, timeout_seconds,
       task_version, backoff, keep_result, rate_key

-- part: claim_pick_rest
-- The end of every claim's pick: never an expired job, the claim index's order, the limit (the
-- locking clause follows).
  AND (expires_at IS NULL OR expires_at > UTC_TIMESTAMP(6))
ORDER BY priority DESC, run_at, id
LIMIT %(limit)s

-- part: claim_pick
-- The next due jobs of a queue, in the claim index's order (the locking clause follows).
{{claimed_columns}}
FROM batchq_job
WHERE queue = %(queue)s AND status = 'ready' AND run_at <= UTC_TIMESTAMP(6)
{{claim_pick_rest}}

-- part: claim_pick_partition
-- claim_pick within one leased partition, through batchq_job_partition (the locking clause follows).
{{claimed_columns}}
FROM batchq_job FORCE INDEX (batchq_job_partition)
WHERE queue = %(queue)s AND status = 'ready' AND claim_partition = %(partition)s
  AND run_at <= UTC_TIMESTAMP(6)
{{claim_pick_rest}}

-- part: claim_mark
-- Mark the locked jobs ours, with a fresh token that fences every later write.
UPDATE batchq_job
SET status = 'processing', processing_at = UTC_TIMESTAMP(6),
    locked_by = %(worker)s, claim_token = %(token)s, version_wait = NULL
WHERE id IN %(ids)s;

-- part: history_replace_succeeded
-- A succeeded job's copy into the history: the columns (the rows follow). REPLACE: a job id used
-- again (a TRUNCATE of batchq_job restarts the ids) replaces the older record.
REPLACE INTO batchq_history (id, queue, task, payload, serializer, outcome, attempts, worker,
                            enqueued_at, started_at, finished_at, wall_seconds, cpu_seconds,
                            memory_peak_bytes, memory_growth_bytes, result, result_note, expires_at)

-- part: keep_from_json
-- The finished jobs (%(done_ids)s, fenced by %(done_token)s) copied into the history with their
-- measurements from %(kept)s, a JSON array of arrays [id, wall ns, CPU us, peak, growth(, result,
-- note)] (batchq.jobs.history.kept_entry). Needs JSON_TABLE (MySQL >= 8.0.4, MariaDB >= 10.6).
{{history_replace_succeeded}}
SELECT j.id, j.queue, j.task, j.payload, j.serializer, 'succeeded', j.error_count + 1, j.locked_by,
       j.created_at, j.processing_at, UTC_TIMESTAMP(6), k.wall_ns / 1e9, k.cpu_us / 1e6, k.peak, k.growth,
       k.result, k.note, UTC_TIMESTAMP(6) + INTERVAL ROUND(j.keep_result * 1000000) MICROSECOND
FROM batchq_job j
JOIN JSON_TABLE(%(kept)s, '$[*]' COLUMNS (
    id BIGINT UNSIGNED PATH '$[0]', wall_ns DOUBLE PATH '$[1]', cpu_us DOUBLE PATH '$[2]',
    peak BIGINT UNSIGNED PATH '$[3]', growth BIGINT UNSIGNED PATH '$[4]',
    result MEDIUMTEXT PATH '$[5]', note VARCHAR(255) PATH '$[6]')) AS k ON k.id = j.id
WHERE j.id IN %(done_ids)s AND j.claim_token = %(done_token)s;

-- part: history_copy_failed
-- Jobs failed for good, copied into the history as failed with their last try's measurements
-- and error (which rows: the WHERE that follows).
REPLACE INTO batchq_history (id, queue, task, payload, serializer, outcome, attempts, worker,
                            enqueued_at, started_at, finished_at, wall_seconds, cpu_seconds,
                            memory_peak_bytes, memory_growth_bytes, error, error_class, expires_at)
SELECT id, queue, task, payload, serializer, 'failed', error_count, last_worker, created_at,
       last_started_at, UTC_TIMESTAMP(6), last_wall_seconds, last_cpu_seconds,
       last_memory_peak_bytes, last_memory_growth_bytes, last_error, error_class,
       UTC_TIMESTAMP(6) + INTERVAL ROUND(keep_result * 1000000) MICROSECOND
FROM batchq_job
