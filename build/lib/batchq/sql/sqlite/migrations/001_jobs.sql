-- The job table. Seed columns (status, processing_at, error_count, created_at) keep their names.
-- Times are UTC text 'YYYY-MM-DD HH:MM:SS.SSS' from strftime(), so they sort as they compare.
CREATE TABLE IF NOT EXISTS batchq_job (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    queue         TEXT    NOT NULL DEFAULT 'default',
    task          TEXT    NOT NULL,
    payload       BLOB    NULL,
    serializer    TEXT    NOT NULL DEFAULT 'json',
    priority      INTEGER NOT NULL DEFAULT 0,
    status        TEXT    NOT NULL DEFAULT 'ready'
                  CHECK (status IN ('ready', 'processing', 'failed')),
    run_at        TEXT    NOT NULL,
    processing_at TEXT    NULL,
    locked_by     TEXT    NULL,
    claim_token   TEXT    NULL,
    error_count   INTEGER NOT NULL DEFAULT 0,
    max_errors    INTEGER NOT NULL DEFAULT 10,
    last_error    TEXT    NULL,
    created_at    TEXT    NOT NULL
);

-- The claim walks this index: due rows of a queue come before future-dated ones.
CREATE INDEX IF NOT EXISTS batchq_job_claim ON batchq_job (queue, status, priority DESC, run_at, id);
-- gc-processing and stats look at rows by status without touching the ready backlog.
CREATE INDEX IF NOT EXISTS batchq_job_status ON batchq_job (status, processing_at);

CREATE TABLE IF NOT EXISTS batchq_queue (
    name   TEXT    PRIMARY KEY,
    paused INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS batchq_schema (
    version    INTEGER PRIMARY KEY,
    applied_at TEXT    NOT NULL
);
