-- The worker registry (batchq.registry): one row per live `batchq run`, written when it starts,
-- refreshed about once a second (last_seen, its counts), deleted when it exits. A row whose
-- worker died stays until a sweep sees it gone (its liveness, as gc-processing asks) and prunes
-- it. stop_requested is set by `batchq stop`: the worker finishes the job at hand and exits.
-- The job a worker runs is not stored here (a write per job): it is the worker's 'processing'
-- row in batchq_job.
CREATE TABLE IF NOT EXISTS batchq_worker (
    name           TEXT    NOT NULL PRIMARY KEY,
    host           TEXT    NOT NULL,
    pid            INTEGER NOT NULL,
    kind           TEXT    NOT NULL DEFAULT 'run',
    serves         TEXT    NOT NULL,
    started_at     TEXT    NOT NULL,
    last_seen      TEXT    NOT NULL,
    jobs_done      INTEGER NOT NULL DEFAULT 0,
    jobs_failed    INTEGER NOT NULL DEFAULT 0,
    stop_requested INTEGER NOT NULL DEFAULT 0
);
