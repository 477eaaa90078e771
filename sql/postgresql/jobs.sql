-- The job table's statements on PostgreSQL (batchq.stores.jobs), by name (psycopg paramstyle).
-- Times are timestamptz compared with statement_timestamp(): the server's clock at the start of
-- the statement. now() would be the start of the transaction (stale in an application's long
-- transaction); clock_timestamp() is volatile, so the planner could not use it in an index scan.

-- name: enqueue
-- One job, due after `delay` seconds on the server's clock, or at `at` (Unix seconds, from an aware
-- datetime; the later of it and now): 'ready' when due now, else
-- 'scheduled' until a worker promotes it (jobs_promote). A trigger NOTIFYs waiting workers.
-- Its claim partition is a random one of %(partitions)s (batchq.coordination.partitions; 1 when none are set up).
-- Its expiry: %(expires)s seconds from now, or the instant %(expires_at)s (Unix seconds), or NULL.
INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at, max_errors, created_at,
                        concurrency_key, concurrency_limit, claim_partition, timeout_seconds, task_version,
                        backoff, keep_result, expires_at, trace_context, rate_key,
                        rate_limit, rate_period)
VALUES (%(queue)s, %(task)s, %(payload)s, %(serializer)s, %(priority)s,
        CASE WHEN %(concurrency_key)s::text IS NOT NULL THEN 'blocked'
             WHEN %(delay)s::float8 > 0 OR to_timestamp(%(at)s::float8) > statement_timestamp()
             THEN 'scheduled' ELSE 'ready' END,
        GREATEST(statement_timestamp() + %(delay)s::float8 * interval '1 second', to_timestamp(%(at)s::float8)),
        %(max_errors)s,
        statement_timestamp(), %(concurrency_key)s::text, %(concurrency_limit)s::int,
        floor(random() * %(partitions)s::int)::int, %(timeout)s::float8, %(task_version)s::int, %(backoff)s::float8,
        %(keep_result)s::float8,
        COALESCE(to_timestamp(%(expires_at)s::float8),
                 statement_timestamp() + %(expires)s::float8 * interval '1 second'), %(trace_context)s::text,
        %(rate_key)s::text, %(rate_limit)s::int, %(rate_period)s::float8)
RETURNING id;

-- name: enqueue_now
-- enqueue for the job most producers send: due now, with no concurrency key, expiry, per-key rate
-- or partitions (batchq.stores.jobs.enqueue_statement picks it). The row enqueue would write for
-- it, without enqueue's per-row CASE and date arithmetic on NULL options: on MariaDB those cost
-- as much as the row's insert itself (bench/insert_cost.py).
INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at, max_errors, created_at,
                        timeout_seconds, task_version, backoff, keep_result, trace_context)
VALUES (%(queue)s, %(task)s, %(payload)s, %(serializer)s, %(priority)s, 'ready', statement_timestamp(),
        %(max_errors)s, statement_timestamp(), %(timeout)s::float8, %(task_version)s::int,
        %(backoff)s::float8, %(keep_result)s::float8, %(trace_context)s::text)
RETURNING id;

-- name: enqueue_many
-- Many jobs of one task, queue and delay in one statement, their payloads as one array, in order.
INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at, max_errors, created_at,
                        concurrency_key, concurrency_limit, claim_partition, timeout_seconds, task_version,
                        backoff, keep_result, expires_at, trace_context, rate_key,
                        rate_limit, rate_period)
SELECT %(queue)s, %(task)s, batch.payload, %(serializer)s, %(priority)s,
       CASE WHEN %(concurrency_key)s::text IS NOT NULL THEN 'blocked'
            WHEN %(delay)s::float8 > 0 OR to_timestamp(%(at)s::float8) > statement_timestamp()
            THEN 'scheduled' ELSE 'ready' END,
       GREATEST(statement_timestamp() + %(delay)s::float8 * interval '1 second', to_timestamp(%(at)s::float8)),
       %(max_errors)s,
       statement_timestamp(), %(concurrency_key)s::text, %(concurrency_limit)s::int,
       floor(random() * %(partitions)s::int)::int, %(timeout)s::float8, %(task_version)s::int, %(backoff)s::float8,
       %(keep_result)s::float8, COALESCE(to_timestamp(%(expires_at)s::float8),
                 statement_timestamp() + %(expires)s::float8 * interval '1 second'),
       %(trace_context)s::text, %(rate_key)s::text, %(rate_limit)s::int, %(rate_period)s::float8
FROM unnest(%(payloads)s::bytea[]) WITH ORDINALITY AS batch(payload, n)
ORDER BY batch.n;

-- name: enqueue_many_now
-- enqueue_many of enqueue_now's jobs (due now, no keys, expiry or partitions): their payloads as
-- one array, in order.
INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at, max_errors, created_at,
                        timeout_seconds, task_version, backoff, keep_result, trace_context)
SELECT %(queue)s, %(task)s, batch.payload, %(serializer)s, %(priority)s, 'ready', statement_timestamp(),
       %(max_errors)s, statement_timestamp(), %(timeout)s::float8, %(task_version)s::int,
       %(backoff)s::float8, %(keep_result)s::float8, %(trace_context)s::text
FROM unnest(%(payloads)s::bytea[]) WITH ORDINALITY AS batch(payload, n)
ORDER BY batch.n;

-- name: enqueue_unique
-- enqueue with a unique_key: writes nothing (no row returned) while a job of that key is waiting
-- or running (the partial unique index batchq_job_unique); a concurrent uncommitted one is
-- waited for. Any other conflict (an id written by hand) still raises.
INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at, max_errors, created_at,
                        concurrency_key, concurrency_limit, unique_key, claim_partition, timeout_seconds,
                        task_version, backoff, keep_result, expires_at, trace_context, rate_key,
                        rate_limit, rate_period)
VALUES (%(queue)s, %(task)s, %(payload)s, %(serializer)s, %(priority)s,
        CASE WHEN %(concurrency_key)s::text IS NOT NULL THEN 'blocked'
             WHEN %(delay)s::float8 > 0 OR to_timestamp(%(at)s::float8) > statement_timestamp()
             THEN 'scheduled' ELSE 'ready' END,
        GREATEST(statement_timestamp() + %(delay)s::float8 * interval '1 second', to_timestamp(%(at)s::float8)),
        %(max_errors)s,
        statement_timestamp(), %(concurrency_key)s::text, %(concurrency_limit)s::int, %(unique_key)s::text,
        floor(random() * %(partitions)s::int)::int, %(timeout)s::float8, %(task_version)s::int,
        %(backoff)s::float8, %(keep_result)s::float8,
        COALESCE(to_timestamp(%(expires_at)s::float8),
                 statement_timestamp() + %(expires)s::float8 * interval '1 second'), %(trace_context)s::text,
        %(rate_key)s::text, %(rate_limit)s::int, %(rate_period)s::float8)
ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND status IN ('ready', 'scheduled', 'blocked', 'processing')
DO NOTHING
RETURNING id;

-- name: enqueue_many_unique
-- enqueue_many with a unique key per payload (NULL: none): the jobs whose key is free, in order;
-- a key taken, or given twice in the batch (the first is written), writes nothing.
INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at, max_errors, created_at,
                        concurrency_key, concurrency_limit, unique_key, claim_partition, timeout_seconds,
                        task_version, backoff, keep_result, expires_at, trace_context, rate_key,
                        rate_limit, rate_period)
SELECT %(queue)s, %(task)s, batch.payload, %(serializer)s, %(priority)s,
       CASE WHEN %(concurrency_key)s::text IS NOT NULL THEN 'blocked'
            WHEN %(delay)s::float8 > 0 OR to_timestamp(%(at)s::float8) > statement_timestamp()
            THEN 'scheduled' ELSE 'ready' END,
       GREATEST(statement_timestamp() + %(delay)s::float8 * interval '1 second', to_timestamp(%(at)s::float8)),
       %(max_errors)s,
       statement_timestamp(), %(concurrency_key)s::text, %(concurrency_limit)s::int, batch.unique_key,
       floor(random() * %(partitions)s::int)::int, %(timeout)s::float8, %(task_version)s::int,
       %(backoff)s::float8, %(keep_result)s::float8,
       COALESCE(to_timestamp(%(expires_at)s::float8),
                 statement_timestamp() + %(expires)s::float8 * interval '1 second'),
       %(trace_context)s::text, %(rate_key)s::text, %(rate_limit)s::int, %(rate_period)s::float8
FROM unnest(%(payloads)s::bytea[], %(unique_keys)s::text[]) WITH ORDINALITY AS batch(payload, unique_key, n)
ORDER BY batch.n
ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND status IN ('ready', 'scheduled', 'blocked', 'processing')
DO NOTHING;

-- name: job_unique_holder
-- The job holding a unique key (waiting or running), if any (walks batchq_job_unique).
SELECT id FROM batchq_job
WHERE unique_key = %(unique_key)s AND status IN ('ready', 'scheduled', 'blocked', 'processing');

-- name: jobs_promote
-- Scheduled jobs whose time has come become ready (walks batchq_job_due), a bounded number per
-- statement, skipping rows another worker is promoting; workers run it about once a second and
-- whenever a claim finds nothing. The NOTIFY trigger wakes waiting workers.
UPDATE batchq_job SET status = 'ready'
WHERE id = ANY(ARRAY(
    SELECT id FROM batchq_job
    WHERE status = 'scheduled' AND run_at <= statement_timestamp()
    ORDER BY run_at
    LIMIT 1000
    FOR UPDATE SKIP LOCKED
));

-- name: jobs_expired_any
-- Is any waiting job past its expiry? The tick's cheap look (batchq_job_expiry holds only jobs
-- with an expiry, so this reads nothing when no job has one) before it takes any lock.
SELECT id FROM batchq_job
WHERE expires_at <= statement_timestamp() AND status IN ('ready', 'scheduled', 'blocked')
LIMIT 1;

-- name: jobs_expiring
-- Waiting jobs past their expiry, a bounded number, locked until jobs_expire fails them in the
-- same transaction. SKIP LOCKED: a row a claim holds is left to that claim, which took it only
-- if it had not expired by the claim's statement (jobs_claim), so it counts as started; a
-- claim arriving after this lock skips the row, and finds it failed if it comes back.
SELECT id FROM batchq_job
WHERE expires_at <= statement_timestamp() AND status IN ('ready', 'scheduled', 'blocked')
ORDER BY expires_at
LIMIT 1000
FOR UPDATE SKIP LOCKED;

-- name: jobs_expire
-- Fail the jobs jobs_expiring locked, for good, without a try: reason 'expired', the error
-- class batchq.errors.JobExpired, one failure group (fingerprint) for all. Tries already made
-- (error_count) stay as counted. The failed-status trigger wakes Queue.result waiters.
UPDATE batchq_job
SET status = 'failed', last_error = 'expired', error_class = %(error_class)s,
    error_fingerprint = %(fingerprint)s, last_error_at = statement_timestamp()
WHERE id = ANY(%(ids)s::bigint[]) AND status IN ('ready', 'scheduled', 'blocked');

-- name: jobs_keep_expired
-- After jobs_expire, in its transaction: the expired jobs whose history is kept (their own
-- keep_result, their queue's keep_for, or `run --keep`: %(keep_all)s) go into batchq_history
-- as failed, as job_keep_failed copies a job out of tries.
{{history_copy_failed}}
WHERE id = ANY(%(ids)s::bigint[]) AND status = 'failed'
  AND (%(keep_all)s::int <> 0 OR keep_result IS NOT NULL
       OR queue IN (SELECT name FROM batchq_queue WHERE keep_for IS NOT NULL))
{{history_replace_failed}}

-- name: jobs_unblock_lock
-- One unblocker at a time per database, until its transaction ends; the others skip (the holder
-- admits for them). Two-int form: clear of the liveness and migration keys.
SELECT pg_try_advisory_xact_lock(hashtext('batchq_job unblock'), 2) AS locked;

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
    WHERE b.status = 'blocked' AND b.run_at <= statement_timestamp()
) AS waiting
WHERE waiting.place <= waiting.slots - waiting.active OR waiting.concurrency_key IS NULL;

-- name: jobs_unblock
-- Admit the jobs jobs_unblockable found (one that was cancelled meanwhile stays gone).
UPDATE batchq_job SET status = 'ready' WHERE id = ANY(%(ids)s::bigint[]) AND status = 'blocked';

-- name: jobs_unblock_unlock
-- Nothing to do: jobs_unblock_lock ends with its transaction.
SELECT true AS released;

-- name: jobs_claim
-- A worker's one statement per job, its own transaction: delete the jobs it finished (fenced by
-- their claim's token), lock the next due jobs of a queue that no other claimer holds (the
-- first rows of batchq_job_claim, which holds 'ready' rows only: every one is due; run_at <= now
-- only turns away a ready row written by hand with a future time) and mark them ours with a
-- fresh token. One row back even when nothing was claimed, to carry the count deleted. MATERIALIZED: the locking
-- subquery runs once, so SKIP LOCKED never finds more rows than the limit. A row past its
-- expiry (expires_at, NULL for most) is never handed out: a claim before it has started the
-- job; the workers' tick fails it (jobs_expiring, jobs_expire). Every claim below does the same.
WITH done AS (
    {{finished_delete}}
    RETURNING 1
), picked AS MATERIALIZED (
    SELECT id FROM batchq_job
    WHERE queue = %(queue)s AND status = 'ready' AND run_at <= statement_timestamp()
    {{claim_pick_rest}}
),
{{claim_mark}}

-- name: jobs_claim_partition
-- jobs_claim within one partition that the worker leases (run --claim partition): the same
-- statement, walking batchq_job_partition (partial, 'ready' rows only) instead.
WITH done AS (
    {{finished_delete}}
    RETURNING 1
), picked AS MATERIALIZED (
    SELECT id FROM batchq_job
    WHERE queue = %(queue)s AND status = 'ready' AND claim_partition = %(partition)s
      AND run_at <= statement_timestamp()
    {{claim_pick_rest}}
),
{{claim_mark}}

-- name: jobs_claim_keep
-- jobs_claim when finished jobs are to be kept (history): the DELETE of the finished jobs returns
-- them, and they go into batchq_history with their measurements (one JSON array %(kept)s of
-- arrays [id, wall ns, CPU us, peak, growth(, result, note)]: batchq.jobs.history.kept_entry), in
-- the same statement: only what was deleted, fenced by its token, is kept.
WITH done AS (
    {{finished_delete}}
    {{finished_returning}}
), kept AS (
    {{history_insert_succeeded}}
    {{history_values_from_json}}
    {{history_replace}}
), picked AS MATERIALIZED (
    SELECT id FROM batchq_job
    WHERE queue = %(queue)s AND status = 'ready' AND run_at <= statement_timestamp()
    {{claim_pick_rest}}
),
{{claim_mark}}

-- name: jobs_claim_keep_one
-- jobs_claim_keep when one finished job is kept, as in every single-job claim that keeps history:
-- its figures come as plain parameters (wall time in ns, CPU time in us) instead of a JSON array
-- to parse and join.
WITH done AS (
    {{finished_delete}}
    {{finished_returning}}
), kept AS (
    {{history_insert_succeeded}}
    SELECT done.id, done.queue, done.task, done.payload, done.serializer, 'succeeded',
           done.error_count + 1, done.locked_by, done.created_at, done.processing_at,
           statement_timestamp(), %(wall_ns)s::float8 / 1e9::float8, %(cpu_us)s::float8 / 1e6::float8,
           %(peak)s::bigint, %(growth)s::bigint, %(result)s::text, %(note)s::text,
           statement_timestamp() + done.keep_result * interval '1 second'
    FROM done
    WHERE done.id = %(kept_id)s::bigint
    {{history_replace}}
), picked AS MATERIALIZED (
    SELECT id FROM batchq_job
    WHERE queue = %(queue)s AND status = 'ready' AND run_at <= statement_timestamp()
    {{claim_pick_rest}}
),
{{claim_mark}}

-- name: jobs_delete
-- Success, when no claim follows (the worker's last jobs): delete them, fenced by their token.
DELETE FROM batchq_job WHERE claim_token = %(token)s AND id = ANY(%(ids)s::bigint[]) AND dependants = 0;

-- name: jobs_delete_keep
-- jobs_delete when the finished jobs are to be kept: deleted and copied into batchq_history (as
-- in jobs_claim_keep) in one statement.
WITH done AS (
    {{finished_delete}}
    {{finished_returning}}
), kept AS (
    {{history_insert_succeeded}}
    {{history_values_from_json}}
    {{history_replace}}
)
SELECT count(*) AS deleted FROM done;

-- part: finished_delete
-- The jobs a worker finished, fenced by their claim's token; a parent whose dependants are not
-- yet released stays (batchq.jobs.dependencies releases them, then deletes it).
DELETE FROM batchq_job WHERE claim_token = %(done_token)s AND id = ANY(%(done_ids)s::bigint[]) AND dependants = 0

-- part: finished_returning
-- What the history keeps of a finished job, returned by finished_delete.
RETURNING id, queue, task, payload, serializer, error_count, locked_by, created_at, processing_at,
          keep_result

-- part: claim_pick_rest
-- The end of every claim's pick: never an expired job, the claim index's order, the limit, and
-- rows no other claimer holds.
  AND (expires_at IS NULL OR expires_at > statement_timestamp())
ORDER BY priority DESC, run_at, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED

-- part: claim_mark
-- Every claim's end: mark the picked jobs ours with a fresh token, and return them in the order
-- they are to run, with the count finished_delete deleted (one row even when none was claimed).
claimed AS (
    UPDATE batchq_job
    SET status = 'processing', processing_at = statement_timestamp(),
        locked_by = %(worker)s, claim_token = %(token)s, version_wait = NULL
    -- = ANY(ARRAY(...)): primary-key lookups whatever the planner guesses of the limit (a join
    -- with picked may hash the whole table in a generic plan).
    WHERE id = ANY(ARRAY(SELECT id FROM picked))
    RETURNING id, queue, task, payload, serializer, priority, error_count, max_errors, timeout_seconds,
              task_version, backoff, keep_result, rate_key, run_at
)
SELECT claimed.id, claimed.queue, claimed.task, claimed.payload, claimed.serializer,
       claimed.priority, claimed.error_count, claimed.max_errors, claimed.timeout_seconds,
       claimed.task_version, claimed.backoff, claimed.keep_result, claimed.rate_key,
       (SELECT count(*) FROM done) AS deleted
FROM (SELECT 1) AS one LEFT JOIN claimed ON true
ORDER BY claimed.priority DESC, claimed.run_at, claimed.id

-- part: history_insert_succeeded
-- A succeeded job's copy into the history: the columns (the rows follow, from done).
INSERT INTO batchq_history (id, queue, task, payload, serializer, outcome, attempts, worker,
                            enqueued_at, started_at, finished_at, wall_seconds, cpu_seconds,
                            memory_peak_bytes, memory_growth_bytes, result, result_note, expires_at)

-- part: history_values_from_json
-- The finished jobs deleted (done) with their measurements from %(kept)s, a JSON array of arrays
-- [id, wall ns, CPU us, peak, growth(, result, note)] (batchq.jobs.history.kept_entry).
SELECT done.id, done.queue, done.task, done.payload, done.serializer, 'succeeded',
       done.error_count + 1, done.locked_by, done.created_at, done.processing_at,
       statement_timestamp(), (k.e->>1)::float8 / 1e9::float8, (k.e->>2)::float8 / 1e6::float8,
       (k.e->>3)::bigint, (k.e->>4)::bigint, k.e->>5, k.e->>6,
       statement_timestamp() + done.keep_result * interval '1 second'
FROM done JOIN jsonb_array_elements(%(kept)s::jsonb) AS k(e) ON (k.e->>0)::bigint = done.id

-- part: history_replace
-- A job id used again (a TRUNCATE ... RESTART IDENTITY of batchq_job) replaces the older record
-- rather than failing the statement.
ON CONFLICT (id) DO UPDATE SET
    queue = excluded.queue, task = excluded.task, payload = excluded.payload,
    serializer = excluded.serializer, outcome = excluded.outcome, attempts = excluded.attempts,
    worker = excluded.worker, enqueued_at = excluded.enqueued_at, started_at = excluded.started_at,
    finished_at = excluded.finished_at, wall_seconds = excluded.wall_seconds,
    cpu_seconds = excluded.cpu_seconds, memory_peak_bytes = excluded.memory_peak_bytes,
    memory_growth_bytes = excluded.memory_growth_bytes, result = excluded.result,
    result_note = excluded.result_note, error = excluded.error, expires_at = excluded.expires_at,
    error_class = excluded.error_class

-- name: jobs_release
-- Claimed jobs the worker will not run (it was told to stop mid-batch) go back, uncounted.
UPDATE batchq_job
SET status = 'ready', processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE claim_token = %(token)s AND id = ANY(%(ids)s::bigint[]);

-- name: job_claim_held
-- A job's transaction (batchq.job_transaction), as it begins: is the job still this worker's
-- claim? A plain read, no row lock: a sweep never waits for a task.
SELECT 1 AS held FROM batchq_job WHERE id = %(id)s AND claim_token = %(token)s;

-- name: job_error
-- Failure: count it (up to 65535, the column's top); retry after `delay` seconds, or fail for
-- good once out of tries.
-- (PostgreSQL evaluates every SET expression against the old row.)
UPDATE batchq_job
SET status = CASE WHEN error_count + 1 >= max_errors THEN 'failed'
                  WHEN %(delay)s::float8 > 0 AND concurrency_key IS NOT NULL THEN 'blocked'
                  WHEN %(delay)s::float8 > 0 THEN 'scheduled' ELSE 'ready' END,
    error_count = CASE WHEN error_count < 65535 THEN error_count + 1 ELSE error_count END,
    last_error = %(error)s, error_class = %(error_class)s, error_fingerprint = %(fingerprint)s, last_error_at = statement_timestamp(),
    run_at = statement_timestamp() + %(delay)s::float8 * interval '1 second',
    last_worker = locked_by, last_started_at = processing_at, last_wall_seconds = %(wall)s,
    last_cpu_seconds = %(cpu)s, last_memory_peak_bytes = %(peak)s, last_memory_growth_bytes = %(growth)s,
    processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE id = %(id)s AND claim_token = %(token)s;

-- name: job_keep_failed
-- After job_error, in its transaction, for a job whose history is kept: if that failure was its
-- last try, copy it into batchq_history as failed, with that try's measurements and error.
{{history_copy_failed}}
WHERE id = %(id)s AND status = 'failed'
{{history_replace_failed}}

-- name: job_wait_for_version
-- The job's task version is newer than this worker knows: put it back uncounted, for a worker
-- that knows it, with who put it back (version_wait, for explain and stats). It waits a tenth
-- of its age, from min_delay to max_delay seconds, times spread (1 to 1.5, drawn by the worker,
-- so that jobs put back together come due one by one, each a fresh chance for a new worker):
-- no worker claims it again at once, and a job stuck behind outdated workers costs them a
-- claim a minute or so. A job with a concurrency key gives its slot back and waits for one again. (An infinite created_at,
-- written by hand, has no age.)
UPDATE batchq_job
SET status = CASE WHEN concurrency_key IS NOT NULL THEN 'blocked' ELSE 'scheduled' END,
    run_at = statement_timestamp() + interval '1 second' * %(spread)s::float8 * LEAST(%(max_delay)s::float8,
        GREATEST(%(min_delay)s::float8, CASE WHEN isfinite(created_at)
            THEN EXTRACT(EPOCH FROM statement_timestamp() - created_at)::float8 / 10 END)),
    version_wait = %(note)s, processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE id = %(id)s AND claim_token = %(token)s;

-- name: jobs_release_unknown
-- After a reconnect, between jobs: a claim whose commit we never saw goes back, uncounted. By
-- its token: the other lanes of a `run --concurrency` process hold claims under the same name.
UPDATE batchq_job
SET status = 'ready', processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE status = 'processing' AND locked_by = %(worker)s AND claim_token = ANY(%(tokens)s::text[]);

-- name: job_cancel
-- Remove a job nobody is running; a claimed job stays.
DELETE FROM batchq_job WHERE id = %(id)s AND status IN ('ready', 'scheduled', 'blocked', 'failed');

-- name: jobs_cancel_where
-- Up to %(batch)s waiting jobs of a queue (of one task when given, enqueued at least
-- %(older_than)s seconds ago), never a claimed or a failed one: one bounded batch per statement,
-- so a large cancel never holds many locks for long. A row a claim holds right now is skipped:
-- it is being claimed. The states as an OR: the queue's 'ready' rows (batchq_job_claim) and
-- its other waiting ones (batchq_job_parked) are two index ranges, where an IN list of the
-- three matches neither partial index.
DELETE FROM batchq_job
WHERE id = ANY(ARRAY(
    SELECT id FROM batchq_job
    WHERE queue = %(queue)s AND (status = 'ready' OR status IN ('scheduled', 'blocked'))
      AND (%(task)s::text IS NULL OR task = %(task)s::text)
      AND created_at <= statement_timestamp() - %(older_than)s::float8 * interval '1 second'
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
));

-- name: queue_stats
-- Per queue and status: counts, due counts, the oldest processing age in seconds (an infinite
-- processing_at, written by hand, has no age), and how many jobs an outdated worker put back
-- for a newer task version (version_wait).
SELECT queue, status, COUNT(*) AS jobs,
       COUNT(*) FILTER (WHERE run_at <= statement_timestamp()) AS due,
       EXTRACT(EPOCH FROM statement_timestamp()
               - MIN(processing_at) FILTER (WHERE isfinite(processing_at)))::float8 AS oldest_seconds,
       COUNT(*) FILTER (WHERE version_wait IS NOT NULL) AS version_waits
FROM batchq_job
GROUP BY queue, status;

-- name: jobs_processing
-- Every claimed job with its owner and age on the server's clock (NULL: unknown, as for a row
-- written by hand with an infinite or NULL processing_at).
SELECT id, queue, task, locked_by, claim_token, error_count, max_errors,
       CASE WHEN isfinite(processing_at)
            THEN EXTRACT(EPOCH FROM statement_timestamp() - processing_at)::float8 END AS age_seconds
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
    last_error = %(error)s, error_class = NULL, error_fingerprint = %(fingerprint)s, last_error_at = statement_timestamp(),
    run_at = statement_timestamp(),
    processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE id = %(id)s AND status = 'processing' AND claim_token IS NOT DISTINCT FROM %(token)s;

-- name: jobs_unrunnable
-- Rows no worker will ever claim, for a human: none here, the CHECK on status and SMALLINT
-- priority rule them out (the other dialects' types do not).
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
UPDATE batchq_job SET status = 'ready', run_at = statement_timestamp()
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
    run_at = CASE WHEN EXISTS (SELECT 1 FROM batchq_dependency d WHERE d.child_id = batchq_job.id) THEN '9999-12-31 00:00:00+00' ELSE statement_timestamp() END,
    parents_left = CASE WHEN parents_left IS NULL THEN NULL
                        ELSE (SELECT COUNT(*) FROM batchq_dependency d WHERE d.child_id = batchq_job.id) END,
    error_count = 0, snoozes = 0
WHERE id = %(id)s AND status = 'failed';

-- name: job_delete_failed
-- Drop a failed job.
DELETE FROM batchq_job WHERE id = %(id)s AND status = 'failed';

-- name: queue_set_paused
-- Pause or resume a queue (paused is 1 or 0, as for the other dialects).
INSERT INTO batchq_queue (name, paused) VALUES (%(queue)s, %(paused)s::int <> 0)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused;

-- name: queue_set_keep_for
-- Keep a queue's finished jobs in batchq_history for keep_for seconds (NULL: stop keeping them).
INSERT INTO batchq_queue (name, paused, keep_for) VALUES (%(queue)s, false, %(keep_for)s::float8)
ON CONFLICT (name) DO UPDATE SET keep_for = excluded.keep_for;

-- name: queues_keep_for
-- The queues whose finished jobs are kept, and for how many seconds.
SELECT name, keep_for FROM batchq_queue WHERE keep_for IS NOT NULL ORDER BY name;

-- name: queues_paused
-- Names of paused queues.
SELECT name FROM batchq_queue WHERE paused ORDER BY name;

-- name: queue_exists
-- Clean-up paths: does a job queue of this name exist (jobs, or its settings row)? A name that
-- today's rules refuse, written by plain SQL, may still be cleared when it does. No index
-- holds every row of a queue: its ready rows (batchq_job_claim), its parked ones
-- (batchq_job_parked) and the running ones (batchq_job_due's status prefix) are asked in turn.
SELECT (EXISTS (SELECT 1 FROM batchq_job WHERE queue = %(queue)s AND status = 'ready')
        OR EXISTS (SELECT 1 FROM batchq_job
                   WHERE queue = %(queue)s AND status IN ('scheduled', 'blocked', 'failed'))
        OR EXISTS (SELECT 1 FROM batchq_job WHERE status = 'processing' AND queue = %(queue)s)
        OR EXISTS (SELECT 1 FROM batchq_queue WHERE name = %(queue)s)) AS present;

-- name: queue_purge
-- Delete a queue's jobs that nobody is running: its ranges of batchq_job_claim and
-- batchq_job_parked (an OR, as in jobs_cancel_where).
DELETE FROM batchq_job
WHERE queue = %(queue)s AND (status = 'ready' OR status IN ('scheduled', 'blocked', 'failed'));

-- name: queue_schema
-- A job queue's type (payload_schema, NULL: untyped or no row).
SELECT payload_schema FROM batchq_queue WHERE name = %(queue)s;

-- name: queue_set_schema
-- Declare or change a job queue's type (NULL: untyped).
INSERT INTO batchq_queue (name, paused, payload_schema) VALUES (%(queue)s, false, %(schema)s)
ON CONFLICT (name) DO UPDATE SET payload_schema = excluded.payload_schema;

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
    last_error = %(error)s, error_class = NULL, error_fingerprint = %(fingerprint)s, last_error_at = statement_timestamp(),
    last_worker = locked_by, last_started_at = processing_at,
    processing_at = NULL, locked_by = NULL, claim_token = NULL
WHERE id = %(id)s AND claim_token = %(token)s;

-- part: history_copy_failed
-- Jobs failed for good, copied into the history as failed with their last try's measurements
-- and error (which rows: the WHERE that follows).
INSERT INTO batchq_history (id, queue, task, payload, serializer, outcome, attempts, worker,
                            enqueued_at, started_at, finished_at, wall_seconds, cpu_seconds,
                            memory_peak_bytes, memory_growth_bytes, error, error_class, expires_at)
SELECT id, queue, task, payload, serializer, 'failed', error_count, last_worker, created_at,
       last_started_at, statement_timestamp(), last_wall_seconds, last_cpu_seconds,
       last_memory_peak_bytes, last_memory_growth_bytes, last_error, error_class,
       statement_timestamp() + keep_result * interval '1 second'
FROM batchq_job

-- part: history_replace_failed
-- A failed job's copy replaces an older record of its id.
ON CONFLICT (id) DO UPDATE SET
    queue = excluded.queue, task = excluded.task, payload = excluded.payload,
    serializer = excluded.serializer, outcome = excluded.outcome, attempts = excluded.attempts,
    worker = excluded.worker, enqueued_at = excluded.enqueued_at, started_at = excluded.started_at,
    finished_at = excluded.finished_at, wall_seconds = excluded.wall_seconds,
    cpu_seconds = excluded.cpu_seconds, memory_peak_bytes = excluded.memory_peak_bytes,
    memory_growth_bytes = excluded.memory_growth_bytes, result = NULL, result_note = NULL,
    error = excluded.error, error_class = excluded.error_class, expires_at = excluded.expires_at;
