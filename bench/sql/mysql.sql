-- Statements the benchmarks run on MySQL/MariaDB beyond batchq's own, by name (PyMySQL pyformat
-- paramstyle), in the format of sql/<dialect>/*.sql. Loaded by bench/queries.py.

-- name: analyze_jobs
-- Fresh index statistics for the job table.
ANALYZE TABLE batchq_job;

-- name: table_state
-- InnoDB's history list length (undo records purge has not yet removed: delete-marked index
-- entries wait for it) and the job table's tablespace file size in bytes.
SELECT (SELECT `count` FROM information_schema.INNODB_METRICS
        WHERE name = 'trx_rseg_history_len') AS history_length,
       (SELECT FILE_SIZE FROM information_schema.INNODB_SYS_TABLESPACES
        WHERE NAME = CONCAT(DATABASE(), '/batchq_job')) AS file_bytes;

-- name: read_view_isolation
-- The session that holds purge back reads as a long report would: REPEATABLE READ.
SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ;

-- name: read_view_open
-- Open a read view now and keep it: purge may not remove anything this snapshot could see.
START TRANSACTION WITH CONSISTENT SNAPSHOT;

-- name: read_view_touch
-- A read inside the snapshot, as a report's first query would run.
SELECT COUNT(*) FROM batchq_queue;
