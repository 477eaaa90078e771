-- Statements the benchmarks run on SQLite beyond batchq's own, by name (named paramstyle), in
-- the format of sql/<dialect>/*.sql. Loaded by bench/queries.py.

-- name: analyze_jobs
-- Fresh planner statistics (as bench/loads.py's bulk_load runs after a load).
ANALYZE;

-- name: table_state
-- The database file's pages and how many of them are free (left by deleted rows).
SELECT (SELECT page_count FROM pragma_page_count()) AS page_count,
       (SELECT freelist_count FROM pragma_freelist_count()) AS freelist_count,
       (SELECT page_size FROM pragma_page_size()) AS page_size;
