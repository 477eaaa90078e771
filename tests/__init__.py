"""batchq's test suite, in tiers: unit/ (no database), contract/ (every backend), dialect/<name>/
(what only that dialect has) and acceptance/ (the CLI, real processes, reliability, liveness).

Helpers live in tests/support, the task modules worker processes import in tests/apps (on the
path as top-level modules), and the SQL the tests run, one file per dialect, in tests/sql.
"""
