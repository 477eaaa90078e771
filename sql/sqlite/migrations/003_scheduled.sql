-- Jobs waiting for their run_at (a delay, a retry backoff) get a status of their own, so that
-- every 'ready' row is due: the claim takes the first row of batchq_job_claim, with no search
-- for the highest priority that has a due job. Workers move due 'scheduled' rows to 'ready'
-- (jobs_promote) through batchq_job_due, which replaces the (status, processing_at) index.
-- SQLite cannot change a CHECK constraint: the table is rebuilt, in init-db's one transaction,
-- keeping its AUTOINCREMENT sequence so that ids are never reused.
CREATE TABLE batchq_job_new (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    queue         TEXT    NOT NULL DEFAULT 'default',
    task          TEXT    NOT NULL,
    payload       BLOB    NULL,
    serializer    TEXT    NOT NULL DEFAULT 'json',
    priority      INTEGER NOT NULL DEFAULT 0,
    status        TEXT    NOT NULL DEFAULT 'ready'
                  CHECK (status IN ('ready', 'processing', 'failed', 'scheduled')),
    run_at        TEXT    NOT NULL,
    processing_at TEXT    NULL,
    locked_by     TEXT    NULL,
    claim_token   TEXT    NULL,
    error_count   INTEGER NOT NULL DEFAULT 0,
    max_errors    INTEGER NOT NULL DEFAULT 10,
    last_error    TEXT    NULL,
    created_at    TEXT    NOT NULL
);
INSERT INTO batchq_job_new SELECT * FROM batchq_job;
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
UPDATE batchq_job SET status = 'scheduled'
WHERE status = 'ready' AND run_at > strftime('%Y-%m-%d %H:%M:%f', 'now');
