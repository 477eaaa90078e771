-- The job table's statements on SQLite (batchq.stores.jobs), by name (sqlite3 named paramstyle).
-- Times are UTC text from strftime('%Y-%m-%d %H:%M:%f', 'now'): they sort as they compare.

-- name: enqueue
-- One job, due after `delay` seconds, or at `at` (Unix seconds, from an aware datetime; the later
-- of it and now): 'ready' when due now, else 'scheduled' until a worker
-- promotes it (jobs_promote).
-- Its claim partition is a random one of :partitions (batchq.coordination.partitions; 1 when none are set up).
-- Its expiry: :expires seconds from now, or the instant :expires_at (Unix seconds), or NULL.
INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at, max_errors, created_at,
                        concurrency_key, concurrency_limit, claim_partition, timeout_seconds, task_version,
                        backoff, keep_result, expires_at, trace_context, rate_key,
                        rate_limit, rate_period)
VALUES (:queue, :task, :payload, :serializer, :priority,
        CASE WHEN :concurrency_key IS NOT NULL THEN 'blocked'
             WHEN :delay > 0 OR strftime('%Y-%m-%d %H:%M:%f', :at, 'unixepoch') > strftime('%Y-%m-%d %H:%M:%f', 'now')
             THEN 'scheduled' ELSE 'ready' END,
        max(strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :delay)),
            coalesce(strftime('%Y-%m-%d %H:%M:%f', :at, 'unixepoch'), strftime('%Y-%m-%d %H:%M:%f', 'now'))),
        :max_errors,
        strftime('%Y-%m-%d %H:%M:%f', 'now'), :concurrency_key, :concurrency_limit,
        abs(random() % :partitions), :timeout, :task_version, :backoff, :keep_result,
        coalesce(strftime('%Y-%m-%d %H:%M:%f', :expires_at, 'unixepoch'),
                 CASE WHEN :expires IS NOT NULL
                      THEN strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :expires)) END), :trace_context,
        :rate_key, :rate_limit, :rate_period);

-- name: enqueue_now
-- enqueue for the job most producers send: due now, with no concurrency key, expiry, per-key rate
-- or partitions (batchq.stores.jobs.enqueue_statement picks it). The row enqueue would write for
-- it, without enqueue's per-row CASE and date arithmetic on NULL options: on MariaDB those cost
-- as much as the row's insert itself (bench/insert_cost.py).
INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at, max_errors, created_at,
                        timeout_seconds, task_version, backoff, keep_result, trace_context)
VALUES (:queue, :task, :payload, :serializer, :priority, 'ready', strftime('%Y-%m-%d %H:%M:%f', 'now'),
        :max_errors, strftime('%Y-%m-%d %H:%M:%f', 'now'), :timeout, :task_version, :backoff, :keep_result,
        :trace_context);

-- name: enqueue_unique
-- enqueue with a unique_key: writes nothing (no change) while a job of that key is waiting or
-- running (the partial unique index batchq_job_unique). Any other conflict still raises.
INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at, max_errors, created_at,
                        concurrency_key, concurrency_limit, unique_key, claim_partition, timeout_seconds,
                        task_version, backoff, keep_result, expires_at, trace_context, rate_key,
                        rate_limit, rate_period)
VALUES (:queue, :task, :payload, :serializer, :priority,
        CASE WHEN :concurrency_key IS NOT NULL THEN 'blocked'
             WHEN :delay > 0 OR strftime('%Y-%m-%d %H:%M:%f', :at, 'unixepoch') > strftime('%Y-%m-%d %H:%M:%f', 'now')
             THEN 'scheduled' ELSE 'ready' END,
        max(strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :delay)),
            coalesce(strftime('%Y-%m-%d %H:%M:%f', :at, 'unixepoch'), strftime('%Y-%m-%d %H:%M:%f', 'now'))),
        :max_errors,
        strftime('%Y-%m-%d %H:%M:%f', 'now'), :concurrency_key, :concurrency_limit, :unique_key,
        abs(random() % :partitions), :timeout, :task_version, :backoff, :keep_result,
        coalesce(strftime('%Y-%m-%d %H:%M:%f', :expires_at, 'unixepoch'),
                 CASE WHEN :expires IS NOT NULL
                      THEN strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :expires)) END), :trace_context,
        :rate_key, :rate_limit, :rate_period)
ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND status IN ('ready', 'scheduled', 'blocked', 'processing')
DO NOTHING;

-- name: job_unique_holder
-- The job holding a unique key (waiting or running), if any (walks batchq_job_unique).
SELECT id FROM batchq_job
WHERE unique_key = :unique_key AND status IN ('ready', 'scheduled', 'blocked', 'processing');

-- name: jobs_promote
-- Scheduled jobs whose time has come become ready (walks batchq_job_due), a bounded number per
-- statement; workers run it about once a second and whenever a claim finds nothing.
UPDATE batchq_job SET status = 'ready'
WHERE id IN (
    SELECT id FROM batchq_job INDEXED BY batchq_job_due
    WHERE status = 'scheduled' AND run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
    ORDER BY run_at
    LIMIT 1000
);

-- name: jobs_expired_any
-- Is any waiting job past its expiry? The tick's cheap look (batchq_job_expiry holds only jobs
-- with an expiry, so this reads nothing when no job has one) before it takes the write lock.
SELECT id FROM batchq_job INDEXED BY batchq_job_expiry
WHERE expires_at <= strftime('%Y-%m-%d %H:%M:%f', 'now') AND expires_at IS NOT NULL
  AND status IN ('ready', 'scheduled', 'blocked')
LIMIT 1;

-- name: jobs_expiring
-- Waiting jobs past their expiry, a bounded number, read inside BEGIN IMMEDIATE (one writer at
-- a time: no claim runs until jobs_expire has failed them and the transaction ends).
SELECT id FROM batchq_job INDEXED BY batchq_job_expiry
WHERE expires_at <= strftime('%Y-%m-%d %H:%M:%f', 'now') AND expires_at IS NOT NULL
  AND status IN ('ready', 'scheduled', 'blocked')
ORDER BY expires_at
LIMIT 1000;

-- name: jobs_expire
-- Fail the jobs jobs_expiring found, for good, without a try: reason 'expired', the error
-- class batchq.errors.JobExpired, one failure group (fingerprint) for all. Tries already made
-- (error_count) stay as counted.
UPDATE batchq_job
SET status = 'failed', last_error = 'expired', error_class = :error_class,
    error_fingerprint = :fingerprint, last_error_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id IN (SELECT value FROM json_each(:ids)) AND status IN ('ready', 'scheduled', 'blocked');

-- name: jobs_keep_expired
-- After jobs_expire, in its transaction: the expired jobs whose history is kept (their own
-- keep_result, their queue's keep_for, or `run --keep`: :keep_all) go into batchq_history as
-- failed, as job_keep_failed copies a job out of tries.
{{history_copy_failed}}
WHERE id IN (SELECT value FROM json_each(:ids)) AND status = 'failed'
  AND (:keep_all <> 0 OR keep_result IS NOT NULL
       OR queue IN (SELECT name FROM batchq_queue WHERE keep_for IS NOT NULL));

-- name: jobs_unblock_lock
-- Nothing to take: jobs_unblock runs inside BEGIN IMMEDIATE, which lets one writer in at a time.
SELECT 1 AS locked;

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
    WHERE b.status = 'blocked' AND b.run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
) AS waiting
WHERE waiting.place <= waiting.slots - waiting.active OR waiting.concurrency_key IS NULL;

-- name: jobs_unblock
-- Admit the jobs jobs_unblockable found (one that was cancelled meanwhile stays gone).
UPDATE batchq_job SET status = 'ready' WHERE id IN (SELECT value FROM json_each(:ids)) AND status = 'blocked';

-- name: jobs_unblock_unlock
-- Nothing to release (see jobs_unblock_lock).
SELECT 1 AS released;

-- name: jobs_claim
-- Inside BEGIN IMMEDIATE, after jobs_delete: mark the next due jobs of a queue as ours, with a
-- fresh token that fences every later write: the first rows of batchq_job_claim, every 'ready'
-- row being due (run_at <= now only turns away a ready row written by hand with a future time).
-- A row past its expiry (expires_at, NULL for most) is never handed out; the workers' tick
-- fails it (jobs_expiring, jobs_expire).
UPDATE batchq_job
{{claim_mark_set}}
WHERE id IN (
    SELECT id FROM batchq_job INDEXED BY batchq_job_claim
    WHERE queue = :queue AND status = 'ready' AND run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
    {{claim_pick_rest}}
)
{{claimed_returning}}

-- name: jobs_claim_partition
-- jobs_claim within one partition that the worker leases (run --claim partition), through
-- batchq_job_partition (partial, 'ready' rows only).
UPDATE batchq_job
{{claim_mark_set}}
WHERE id IN (
    SELECT id FROM batchq_job INDEXED BY batchq_job_partition
    WHERE queue = :queue AND status = 'ready' AND claim_partition = :partition
      AND run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
    {{claim_pick_rest}}
)
{{claimed_returning}}

-- name: jobs_keep
-- Before jobs_delete, in the claim's BEGIN IMMEDIATE, when finished jobs are to be kept: copy
-- them into batchq_history, fenced by their token, with their measurements (one JSON array
-- :kept of arrays [id, wall ns, CPU us, peak, growth(, result, note)]: history.kept_entry). OR REPLACE: a job id used again replaces
-- the older record rather than failing the claim (batchq_job's AUTOINCREMENT never reuses one).
INSERT OR REPLACE INTO batchq_history (id, queue, task, payload, serializer, outcome, attempts, worker,
                                       enqueued_at, started_at, finished_at, wall_seconds, cpu_seconds,
                                       memory_peak_bytes, memory_growth_bytes, result, result_note, expires_at)
SELECT j.id, j.queue, j.task, j.payload, j.serializer, 'succeeded', j.error_count + 1, j.locked_by,
       j.created_at, j.processing_at, strftime('%Y-%m-%d %H:%M:%f', 'now'),
       json_extract(k.value, '$[1]') / 1e9, json_extract(k.value, '$[2]') / 1e6,
       json_extract(k.value, '$[3]'), json_extract(k.value, '$[4]'),
       json_extract(k.value, '$[5]'), json_extract(k.value, '$[6]'),
       CASE WHEN j.keep_result IS NOT NULL
            THEN strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', j.keep_result)) END
FROM json_each(:kept) AS k JOIN batchq_job j ON j.id = json_extract(k.value, '$[0]')
WHERE j.claim_token = :done_token;

-- name: jobs_delete
-- Success: the finished jobs, fenced by their token (ids as a JSON array: SQLite binds no lists).
DELETE FROM batchq_job WHERE claim_token = :token AND id IN (SELECT value FROM json_each(:ids)) AND dependants = 0;

-- name: jobs_release
-- Claimed jobs the worker will not run (it was told to stop mid-batch) go back, uncounted.
UPDATE batchq_job
SET status = 'ready', processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE claim_token = :token AND id IN (SELECT value FROM json_each(:ids));

-- name: job_claim_held
-- A job's transaction (batchq.job_transaction), as it begins: is the job still this worker's
-- claim? A plain read, no row lock: a sweep never waits for a task.
SELECT 1 AS held FROM batchq_job WHERE id = :id AND claim_token = :token;

-- name: job_error
-- Failure: count it (up to 65535, the column's top); retry after `delay` seconds, or fail for
-- good once out of tries.
UPDATE batchq_job
SET status = CASE WHEN error_count + 1 >= max_errors THEN 'failed'
                  WHEN :delay > 0 AND concurrency_key IS NOT NULL THEN 'blocked'
                  WHEN :delay > 0 THEN 'scheduled' ELSE 'ready' END,
    error_count = CASE WHEN error_count < 65535 THEN error_count + 1 ELSE error_count END,
    last_error = :error, error_class = :error_class, error_fingerprint = :fingerprint, last_error_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    run_at = strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :delay)),
    last_worker = locked_by, last_started_at = processing_at, last_wall_seconds = :wall,
    last_cpu_seconds = :cpu, last_memory_peak_bytes = :peak, last_memory_growth_bytes = :growth,
    processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE id = :id AND claim_token = :token;

-- name: job_keep_failed
-- After job_error, in its transaction, for a job whose history is kept: if that failure was its
-- last try, copy it into batchq_history as failed, with that try's measurements and error.
{{history_copy_failed}}
WHERE id = :id AND status = 'failed';

-- name: job_wait_for_version
-- The job's task version is newer than this worker knows: put it back uncounted, for a worker
-- that knows it, with who put it back (version_wait, for explain and stats). It waits a tenth
-- of its age, from min_delay to max_delay seconds, times spread (1 to 1.5, drawn by the worker,
-- so that jobs put back together come due one by one, each a fresh chance for a new worker):
-- no worker claims it again at once, and a job stuck behind outdated workers costs them a
-- claim a minute or so. A job with a concurrency key gives its slot back and waits for one again.
UPDATE batchq_job
SET status = CASE WHEN concurrency_key IS NOT NULL THEN 'blocked' ELSE 'scheduled' END,
    run_at = strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :spread * MIN(:max_delay, MAX(:min_delay,
        COALESCE((julianday('now') - julianday(created_at)) * 8640.0, 0))))),
    version_wait = :note, processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE id = :id AND claim_token = :token;

-- name: jobs_release_unknown
-- After a reconnect, between jobs: a claim whose commit we never saw goes back, uncounted. By
-- its token: the other lanes of a `run --concurrency` process hold claims under the same name.
UPDATE batchq_job
SET status = 'ready', processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE status = 'processing' AND locked_by = :worker
    AND claim_token IN (SELECT value FROM json_each(:tokens));

-- name: job_cancel
-- Remove a job nobody is running; a claimed job stays.
DELETE FROM batchq_job WHERE id = :id AND status IN ('ready', 'scheduled', 'blocked', 'failed');

-- name: jobs_cancel_where
-- Up to :batch waiting jobs of a queue (of one task when given, enqueued at least :older_than
-- seconds ago), never a claimed or a failed one: one bounded batch per statement, so a large
-- cancel never keeps other writers out for long.
DELETE FROM batchq_job
WHERE id IN (
    SELECT id FROM batchq_job
    WHERE queue = :queue AND status IN ('ready', 'scheduled', 'blocked')
      AND (:task IS NULL OR task = :task)
      AND created_at <= strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', -:older_than))
    LIMIT :batch
);

-- name: queue_stats
-- Per queue and status: counts, due counts, the oldest processing age in seconds, and how many
-- jobs an outdated worker put back for a newer task version (version_wait).
SELECT queue, status, COUNT(*) AS jobs,
       SUM(run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')) AS due,
       (julianday('now') - julianday(MIN(processing_at))) * 86400.0 AS oldest_seconds,
       SUM(version_wait IS NOT NULL) AS version_waits
FROM batchq_job
GROUP BY queue, status;

-- name: jobs_processing
-- Every claimed job with its owner and age.
SELECT id, queue, task, locked_by, claim_token, error_count, max_errors,
       (julianday('now') - julianday(processing_at)) * 86400.0 AS age_seconds
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
    last_error = :error, error_class = NULL, error_fingerprint = :fingerprint, last_error_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    run_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE id = :id AND status = 'processing' AND claim_token IS :token;

-- name: jobs_unrunnable
-- Rows no worker will ever claim, for a human: none here. A priority of any type (SQLite lets a
-- row written by hand hold one) still sorts in the claim's ORDER BY, and the CHECK on status
-- keeps out statuses no statement looks for.
SELECT id, queue, task, status, priority
FROM batchq_job
WHERE false;

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
UPDATE batchq_job SET status = 'ready', run_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id = :id AND status = 'scheduled' AND coalesce(parents_left, 0) = 0;

-- name: job_failed_one
-- One failed job as jobs_failed lists it, by its primary key: the dashboard's "retry now"
-- requeues it without reading every failed job (jobs_failed took a second with 50,000 failed).
SELECT id, queue, task, error_count, max_errors, last_error, created_at, concurrency_key,
       error_fingerprint, last_error_at, unique_key, last_worker, last_started_at, last_wall_seconds,
       last_cpu_seconds, last_memory_peak_bytes, last_memory_growth_bytes
FROM batchq_job
WHERE id = :id AND status = 'failed';

-- name: job_requeue_failed
-- Give a failed job a fresh set of tries, due now (a job with a concurrency key waits for a slot);
-- a job that still has unfinished parents (batchq.jobs.dependencies) waits for them again. Its
-- snoozes start again from 0 too (batchq.jobs.control: a job failed for snoozing too often).
UPDATE batchq_job
SET status = CASE WHEN EXISTS (SELECT 1 FROM batchq_dependency d WHERE d.child_id = batchq_job.id) THEN 'scheduled'
                  WHEN concurrency_key IS NULL THEN 'ready' ELSE 'blocked' END,
    run_at = CASE WHEN EXISTS (SELECT 1 FROM batchq_dependency d WHERE d.child_id = batchq_job.id) THEN '9999-12-31 00:00:00.000' ELSE strftime('%Y-%m-%d %H:%M:%f', 'now') END,
    parents_left = CASE WHEN parents_left IS NULL THEN NULL
                        ELSE (SELECT COUNT(*) FROM batchq_dependency d WHERE d.child_id = batchq_job.id) END,
    error_count = 0, snoozes = 0
WHERE id = :id AND status = 'failed';

-- name: job_delete_failed
-- Drop a failed job.
DELETE FROM batchq_job WHERE id = :id AND status = 'failed';

-- name: queue_set_paused
-- Pause or resume a queue.
INSERT INTO batchq_queue (name, paused) VALUES (:queue, :paused)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused;

-- name: queue_set_keep_for
-- Keep a queue's finished jobs in batchq_history for keep_for seconds (NULL: stop keeping them).
INSERT INTO batchq_queue (name, paused, keep_for) VALUES (:queue, 0, :keep_for)
ON CONFLICT (name) DO UPDATE SET keep_for = excluded.keep_for;

-- name: queues_keep_for
-- The queues whose finished jobs are kept, and for how many seconds.
SELECT name, keep_for FROM batchq_queue WHERE keep_for IS NOT NULL ORDER BY name;

-- name: queues_paused
-- Names of paused queues.
SELECT name FROM batchq_queue WHERE paused = 1 ORDER BY name;

-- name: queue_exists
-- Clean-up paths: does a job queue of this name exist (jobs, or its settings row)? A name that
-- today's rules refuse, written by plain SQL, may still be cleared when it does.
SELECT (EXISTS (SELECT 1 FROM batchq_job WHERE queue = :queue)
        OR EXISTS (SELECT 1 FROM batchq_queue WHERE name = :queue)) AS present;

-- name: queue_purge
-- Delete a queue's jobs that nobody is running.
DELETE FROM batchq_job WHERE queue = :queue AND status IN ('ready', 'scheduled', 'blocked', 'failed');

-- name: queue_schema
-- A job queue's type (payload_schema, NULL: untyped or no row).
SELECT payload_schema FROM batchq_queue WHERE name = :queue;

-- name: queue_set_schema
-- Declare or change a job queue's type (NULL: untyped).
INSERT INTO batchq_queue (name, paused, payload_schema) VALUES (:queue, 0, :schema)
ON CONFLICT (name) DO UPDATE SET payload_schema = excluded.payload_schema;

-- name: queue_waiting_payloads
-- A page of a queue's waiting jobs (ready, delayed, blocked) by id, for alter_queue to check against a new type.
SELECT id, payload, serializer FROM batchq_job
WHERE queue = :queue AND status IN ('ready', 'scheduled', 'blocked') AND id > :after
ORDER BY id LIMIT :limit;

-- name: job_fail_invalid
-- A claimed job whose payload does not match its queue's type: failed at once, counted, with the reason.
UPDATE batchq_job
SET status = 'failed',
    error_count = CASE WHEN error_count < 65535 THEN error_count + 1 ELSE error_count END,
    last_error = :error, error_class = NULL, error_fingerprint = :fingerprint, last_error_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    last_worker = locked_by, last_started_at = processing_at,
    processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE id = :id AND claim_token = :token;

-- part: claim_mark_set
-- Every claim's marking: the jobs ours, with a fresh token that fences every later write.
SET status = 'processing', processing_at = strftime('%Y-%m-%d %H:%M:%f', 'now'),
    locked_by = :worker, claim_token = :token, version_wait = NULL

-- part: claim_pick_rest
-- The end of every claim's pick: never an expired job, the claim index's order, the limit.
  AND (expires_at IS NULL OR expires_at > strftime('%Y-%m-%d %H:%M:%f', 'now'))
ORDER BY priority DESC, run_at, id
LIMIT :limit

-- part: claimed_returning
-- What a claim returns of each job it takes. The payload comes back as bytes whatever its
-- storage class: a TEXT payload that is not UTF-8 (written by hand) would fail the whole claim
-- when decoded. RETURNING gives no order: the backend sorts a batch by priority, run_at and id.
RETURNING id, queue, task, CAST(payload AS BLOB) AS payload, serializer, priority, error_count,
          max_errors, timeout_seconds, task_version, backoff, keep_result, rate_key, run_at;

-- part: history_copy_failed
-- Jobs failed for good, copied into the history as failed with their last try's measurements
-- and error (which rows: the WHERE that follows).
INSERT OR REPLACE INTO batchq_history (id, queue, task, payload, serializer, outcome, attempts, worker,
                                       enqueued_at, started_at, finished_at, wall_seconds, cpu_seconds,
                                       memory_peak_bytes, memory_growth_bytes, error, error_class, expires_at)
SELECT id, queue, task, payload, serializer, 'failed', error_count, last_worker, created_at,
       last_started_at, strftime('%Y-%m-%d %H:%M:%f', 'now'), last_wall_seconds, last_cpu_seconds,
       last_memory_peak_bytes, last_memory_growth_bytes, last_error, error_class,
       CASE WHEN keep_result IS NOT NULL
            THEN strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', keep_result)) END
FROM batchq_job
