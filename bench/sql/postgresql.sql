-- Statements the benchmarks run on PostgreSQL beyond batchq's own, by name (psycopg pyformat
-- paramstyle), in the format of sql/<dialect>/*.sql. Loaded by bench/queries.py.

-- name: analyze_jobs
-- Fresh planner statistics for the job table (not VACUUM: that would remove the dead rows measured).
ANALYZE batchq_job;

-- name: table_state
-- The job table's dead and live rows as the statistics collector counts them, its heap and
-- index sizes in bytes, and how often it was vacuumed (by hand, by autovacuum).
SELECT s.n_live_tup, s.n_dead_tup,
       pg_relation_size('batchq_job') AS heap_bytes, pg_indexes_size('batchq_job') AS index_bytes,
       s.vacuum_count, s.autovacuum_count, current_setting('autovacuum') AS autovacuum
FROM pg_stat_user_tables AS s
WHERE s.relid = 'batchq_job'::regclass;

-- name: table_options
-- The job table's storage parameters (reloptions), as migrations set them.
SELECT coalesce(array_to_string(reloptions, ', '), '') AS options
FROM pg_class WHERE oid = 'batchq_job'::regclass;

-- name: snapshot_isolation
-- First in the transaction that holds vacuum back: REPEATABLE READ keeps one snapshot (its xmin).
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;

-- name: read_view_touch
-- A read inside the snapshot, as a report's first query would run: the snapshot is taken now.
SELECT COUNT(*) FROM batchq_queue;
