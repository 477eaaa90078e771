-- Job dependencies on SQLite (batchq.jobs.dependencies): enqueue(after=...), the release of a
-- finished parent's children, the failure of a failed parent's dependants, and the sweep that
-- keeps dependants consistent. A waiting job: status 'scheduled', run_at at the end of time,
-- parents_left > 0. SQLite's writers take turns: there are no row locks to take.

-- name: deps_parents
-- The named parents as they are now, in one statement (one snapshot): their job rows, then the
-- unexpired history records of those whose row is gone (ended = 1: a parent that succeeded
-- is gone from the job table, kept only there). A plain read: the one-line error before anything
-- is written.
SELECT id, status, 0 AS ended FROM batchq_job WHERE id IN (SELECT value FROM json_each(:ids))
UNION ALL
SELECT id, outcome, 1 FROM batchq_history
WHERE id IN (SELECT value FROM json_each(:ids)) AND (expires_at IS NULL OR expires_at > strftime('%Y-%m-%d %H:%M:%f', 'now'));

-- name: deps_mark_parents
-- Mark the parents as having dependants, locking their rows: a parent finishing meanwhile
-- either committed first (it is gone: fewer rows) or finds the mark (its plain DELETE skips it).
UPDATE batchq_job SET dependants = 1
WHERE id IN (SELECT value FROM json_each(:ids)) AND status IN ('ready', 'scheduled', 'blocked', 'processing');

-- name: deps_wait
-- The children just inserted, in the same transaction: waiting for their parents.
UPDATE batchq_job SET status = 'scheduled', run_at = '9999-12-31 00:00:00.000', parents_left = :count
WHERE id IN (SELECT value FROM json_each(:ids));

-- name: deps_link
-- One edge parent -> child (executemany).
INSERT INTO batchq_dependency (parent_id, child_id) VALUES (:parent, :child);

-- name: deps_owned
-- Of the finished jobs the claim's DELETE left (dependants = 1), those still ours, locked.
SELECT id FROM batchq_job
WHERE id IN (SELECT value FROM json_each(:ids)) AND claim_token = :token AND dependants = 1
ORDER BY id;

-- name: deps_children
-- The children of these parents, locked in id order (finishers sharing children never deadlock).
SELECT id FROM batchq_job
WHERE id IN (SELECT child_id FROM batchq_dependency WHERE parent_id IN (SELECT value FROM json_each(:ids)))
ORDER BY id;

-- name: deps_release
-- One parent fewer for each child (once per finished parent: this runs per parent); a waiting
-- child whose last parent this was becomes due now (blocked when it has a concurrency key).
UPDATE batchq_job
SET run_at = CASE WHEN status = 'scheduled' AND parents_left = 1 THEN strftime('%Y-%m-%d %H:%M:%f', 'now') ELSE run_at END,
    status = CASE WHEN status = 'scheduled' AND parents_left = 1
                  THEN CASE WHEN concurrency_key IS NULL THEN 'ready' ELSE 'blocked' END
                  ELSE status END,
    parents_left = parents_left - 1
WHERE id IN (SELECT child_id FROM batchq_dependency WHERE parent_id = :parent) AND parents_left > 0;

-- name: deps_forget
-- The edges of parents that succeeded (or were deleted: the sweep).
DELETE FROM batchq_dependency WHERE parent_id IN (SELECT value FROM json_each(:ids));

-- name: deps_delete
-- The finished parents, fenced by their claim's token, once their children are released.
DELETE FROM batchq_job WHERE id IN (SELECT value FROM json_each(:ids)) AND claim_token = :token;

-- name: deps_delete_keep
-- deps_delete for parents whose history is kept: the claim that left them (jobs_keep from the
-- table, fenced by the token, not derived from its DELETE) copied them already.
DELETE FROM batchq_job WHERE claim_token = :done_token AND id IN (SELECT value FROM json_each(:done_ids));

-- name: deps_waiting_children
-- The children of a parent that are still waiting (to fail them with it).
SELECT c.id FROM batchq_dependency d JOIN batchq_job c ON c.id = d.child_id
WHERE d.parent_id = :parent AND c.status = 'scheduled' AND c.parents_left > 0
ORDER BY c.id;

-- name: deps_fail
-- Waiting children failed for good with their parent, with the reason; their run_at is now.
UPDATE batchq_job
SET status = 'failed', last_error = :error, error_class = NULL, error_fingerprint = :fingerprint,
    last_error_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), run_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE id IN (SELECT value FROM json_each(:ids)) AND status = 'scheduled' AND parents_left > 0;

-- name: deps_orphans
-- The sweep's safety net: waiting children of a parent that failed for good or was deleted
-- without succeeding (a path that did not fail them itself: a crash, purge, cancel_where).
SELECT d.parent_id, d.child_id, p.status AS parent_status
FROM batchq_dependency d
JOIN batchq_job c ON c.id = d.child_id
LEFT JOIN batchq_job p ON p.id = d.parent_id
WHERE c.status = 'scheduled' AND c.parents_left > 0 AND (p.id IS NULL OR p.status = 'failed')
ORDER BY d.child_id
LIMIT 1000;

-- name: deps_gone_edges
-- Edges whose parent is gone from the job table (deleted without succeeding) and whose child no
-- longer waits (deps_orphans failed it, or it is gone too): dropped, so that a requeue of the
-- child runs it without that parent. A child still waiting keeps its edge for deps_orphans.
SELECT d.parent_id, d.child_id
FROM batchq_dependency d
LEFT JOIN batchq_job p ON p.id = d.parent_id
LEFT JOIN batchq_job c ON c.id = d.child_id
WHERE p.id IS NULL AND (c.id IS NULL OR c.status <> 'scheduled' OR coalesce(c.parents_left, 0) <= 0)
LIMIT 1000;

-- name: deps_unlink
-- One edge dropped.
DELETE FROM batchq_dependency WHERE parent_id = :parent AND child_id = :child;

-- name: deps_waiting_for
-- explain: the parents a job still waits for (at most five), and their states.
SELECT d.parent_id, p.status AS parent_status,
       (SELECT count(*) FROM batchq_dependency e WHERE e.child_id = :id) AS total
FROM batchq_dependency d LEFT JOIN batchq_job p ON p.id = d.parent_id
WHERE d.child_id = :id
ORDER BY d.parent_id
LIMIT 5;
