-- Bounded job queues (Queue.configure), on PostgreSQL, by name (psycopg paramstyle).
-- A queue's bound lives on its batchq_queue row (max_length NULL: unbounded). Waiting jobs
-- (ready, scheduled, blocked) count against it; running and failed ones do not.

-- name: queue_bound
-- A queue's bound, as producers cache it for a second.
SELECT max_length, overflow FROM batchq_queue WHERE name = %(queue)s;

-- name: queue_bound_lock
-- A bounded enqueue's first statement: lock the queue's row (bounded producers of one queue take
-- turns) and read its bound as it stands.
SELECT max_length, overflow FROM batchq_queue WHERE name = %(queue)s FOR UPDATE;

-- name: queue_bound_set
-- Set or lift (NULL) a queue's bound; a queue not paused or bounded before gets its row.
INSERT INTO batchq_queue (name, paused, max_length, overflow)
VALUES (%(queue)s, false, %(max_length)s, %(overflow)s)
ON CONFLICT (name) DO UPDATE SET max_length = excluded.max_length, overflow = excluded.overflow;

-- name: queue_waiting_count
-- A queue's waiting jobs: what its bound limits. Two counts, each read from one index alone:
-- the ready rows in batchq_job_claim, the others in batchq_job_parked.
SELECT (SELECT COUNT(*) FROM batchq_job WHERE queue = %(queue)s AND status = 'ready')
     + (SELECT COUNT(*) FROM batchq_job WHERE queue = %(queue)s AND status IN ('scheduled', 'blocked'))
       AS waiting;

-- name: queue_overflow_victims
-- The oldest waiting jobs of a full drop_oldest queue (never a running one), read without locks:
-- jobs_drop_overflow locks each and checks it is still waiting. (A locking read here would lock
-- every waiting job of the queue while sorting them by id.)
SELECT id FROM batchq_job WHERE queue = %(queue)s AND status IN ('ready', 'scheduled', 'blocked')
ORDER BY id LIMIT %(n)s;

-- name: jobs_drop_overflow
-- Drop waiting jobs to make room: failed, with the reason as their last error, for gc-error;
-- a job a worker claimed meanwhile is no longer waiting and is left alone.
UPDATE batchq_job
SET status = 'failed', last_error = %(error)s, error_class = NULL, error_fingerprint = %(fingerprint)s, last_error_at = statement_timestamp()
WHERE id = ANY(%(ids)s::bigint[]) AND status IN ('ready', 'scheduled', 'blocked');
