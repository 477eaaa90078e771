-- The connection's own statements on SQLite (batchq.backends): the session's setup, the
-- schema's version and the migration lock, a worker's liveness, and what else the backend runs
-- for itself; never a feature's (those are the stores', in the files beside this one).
-- Times are UTC text from strftime('%Y-%m-%d %H:%M:%f', 'now'): they sort as they compare.

-- name: session_setup
-- Run first on every connection (bench/ floors too): WAL, so readers never block the writer.
PRAGMA journal_mode = WAL;

-- name: session_foreign_keys
-- Then foreign keys on (SQLite's extra session query).
PRAGMA foreign_keys = ON;

-- name: schema_version
-- The highest migration applied.
SELECT MAX(version) AS version FROM batchq_schema;

-- name: schema_version_set
-- Record a migration as applied (a concurrent init-db may have done it already).
INSERT OR IGNORE INTO batchq_schema (version, applied_at)
VALUES (:version, strftime('%Y-%m-%d %H:%M:%f', 'now'));
