-- Per-key concurrency: a job enqueued with a concurrency_key waits as 'blocked' until fewer than
-- its concurrency_limit jobs of that key are 'ready' or 'processing'; then a worker (jobs_unblock)
-- makes it ready. batchq_job_concurrency, partial, counts a key's active jobs and costs jobs
-- without a key nothing. SQLite cannot change a CHECK constraint: the table is rebuilt, in
-- init-db's one transaction, keeping its AUTOINCREMENT sequence so that ids are never reused.
CREATE TABLE batchq_job_new (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    queue             TEXT    NOT NULL DEFAULT 'default',
    task              TEXT    NOT NULL,
    payload           BLOB    NULL,
    serializer        TEXT    NOT NULL DEFAULT 'json',
    priority          INTEGER NOT NULL DEFAULT 0,
    status            TEXT    NOT NULL DEFAULT 'ready'
                      CHECK (status IN ('ready', 'processing', 'failed', 'scheduled', 'blocked')),
    run_at            TEXT    NOT NULL,
    processing_at     TEXT    NULL,
    locked_by         TEXT    NULL,
    claim_token       TEXT    NULL,
    error_count       INTEGER NOT NULL DEFAULT 0,
    max_errors        INTEGER NOT NULL DEFAULT 10,
    last_error        TEXT    NULL,
    created_at        TEXT    NOT NULL,
    concurrency_key   TEXT    NULL,
    concurrency_limit INTEGER NULL
);
INSERT INTO batchq_job_new (id, queue, task, payload, serializer, priority, status, run_at,
                            processing_at, locked_by, claim_token, error_count, max_errors,
                            last_error, created_at)
    SELECT id, queue, task, payload, serializer, priority, status, run_at, processing_at,
           locked_by, claim_token, error_count, max_errors, last_error, created_at
    FROM batchq_job;
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'batchq_job_new', 0 FROM sqlite_sequence WHERE name = 'batchq_job'
    AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'batchq_job_new');
UPDATE sqlite_sequence
SET seq = MAX(seq, (SELECT seq FROM sqlite_sequence WHERE name = 'batchq_job'))
WHERE name = 'batchq_job_new';
DROP TABLE batchq_job;
ALTER TABLE batchq_job_new RENAME TO batchq_job;
CREATE INDEX batchq_job_claim ON batchq_job (queue, status, priority DESC, run_at, id);
CREATE INDEX batchq_job_due ON batchq_job (status, run_at);
CREATE INDEX batchq_job_concurrency ON batchq_job (concurrency_key, status)
    WHERE concurrency_key IS NOT NULL;
