"""The benchmark table: batchq's schema emptied, jobs loaded server-side, jobs counted.

Setup only, never timed. Each runs on a raw-driver floor connection (floors.py).
"""

from __future__ import annotations

from batchq import Queue

from floors import Floor, floor_for
from settings import TASK, url_for

CHUNK = 100_000  # jobs per INSERT ... SELECT


def reset(backend: str) -> None:
    """Create the schema with batchq's own init_db, then empty the tables."""
    q = Queue(url_for(backend))
    q.init_db()
    q.close()
    floor = floor_for(backend)
    if backend == "mysql":
        floor.execute("TRUNCATE TABLE batchq_job")
    elif backend == "postgresql":
        # A fresh heap and indexes: no dead rows left by the previous run (ids restart too,
        # as MySQL's TRUNCATE does). TRUNCATE fires no row trigger (no NOTIFY).
        floor.execute("TRUNCATE TABLE batchq_job RESTART IDENTITY")
    else:
        floor.execute("DELETE FROM batchq_job")
        floor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    floor.execute("DELETE FROM batchq_queue")
    floor.close()


def bulk_load(
    backend: str,
    n: int,
    *,
    delay_seconds: float = 0.0,
    status: str = "ready",
    priority: int = 0,
    start: int = 0,
) -> None:
    """Insert n jobs server-side (setup only, never timed). Due ones get run_at in the past;
    delayed ones are 'scheduled', as enqueue() writes them. Job i (start < i <= start + n) has
    the payload {"i": i}; then the table is analysed."""
    if n <= 0:
        return
    floor = floor_for(backend)
    insert = {"mysql": _insert_mysql, "postgresql": _insert_postgresql, "sqlite": _insert_sqlite}[backend]
    if status == "ready" and delay_seconds > 0:
        status = "scheduled"
    columns = {"priority": priority, "status": status, "errors": 10 if status == "failed" else 0}
    for lo in range(start, start + n, CHUNK):
        insert(floor, lo + 1, min(lo + CHUNK, start + n), delay_seconds, columns)
    if backend == "mysql":
        floor.execute("ANALYZE TABLE batchq_job")
    elif backend == "postgresql":
        # VACUUM too: it sets the hint bits and the visibility map now rather than during the
        # timed run, and resets the insert count that would start an autovacuum mid-run.
        floor.execute("VACUUM (ANALYZE) batchq_job")
    else:
        floor.execute("ANALYZE")
    floor.close()


COLUMNS = "queue, task, payload, serializer, priority, status, run_at, error_count, max_errors, created_at"


def _insert_mysql(floor: Floor, lo: int, hi: int, delay_seconds: float, c: dict) -> None:
    """One INSERT ... SELECT over MariaDB's sequence engine (seq_<lo>_to_<hi>)."""
    if delay_seconds:
        run_at = f"UTC_TIMESTAMP(6) + INTERVAL {delay_seconds} SECOND"
    else:
        run_at = "UTC_TIMESTAMP(6) - INTERVAL 1 SECOND"
    floor.execute(
        f"INSERT INTO batchq_job ({COLUMNS})"
        f" SELECT 'default', '{TASK}', CONCAT('{{\"i\":', seq, '}}'), 'json', {c['priority']},"
        f" '{c['status']}', {run_at}, {c['errors']}, 10, UTC_TIMESTAMP(6)"
        f" FROM seq_{lo}_to_{hi}"
    )


def _insert_postgresql(floor: Floor, lo: int, hi: int, delay_seconds: float, c: dict) -> None:
    """One INSERT ... SELECT over generate_series, in autocommit. batchq's NOTIFY trigger
    fires for the due ready rows (PostgreSQL folds them into one NOTIFY)."""
    if delay_seconds:
        run_at = f"statement_timestamp() + interval '{delay_seconds} seconds'"
    else:
        run_at = "statement_timestamp() - interval '1 second'"
    floor.execute(
        f"INSERT INTO batchq_job ({COLUMNS})"
        f" SELECT 'default', '{TASK}', convert_to('{{\"i\":' || i || '}}', 'UTF8'), 'json',"
        f" {c['priority']}, '{c['status']}', {run_at}, {c['errors']}, 10, statement_timestamp()"
        " FROM generate_series(%(lo)s::bigint, %(hi)s::bigint) AS s(i)",
        {"lo": lo, "hi": hi},
    )


def _insert_sqlite(floor: Floor, lo: int, hi: int, delay_seconds: float, c: dict) -> None:
    """One INSERT ... SELECT over a recursive CTE, in one transaction."""
    modifier = f"+{delay_seconds} seconds" if delay_seconds else "-1 seconds"
    floor.execute("BEGIN")
    floor.execute(
        "WITH RECURSIVE s(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM s WHERE i < ?)"
        f" INSERT INTO batchq_job ({COLUMNS})"
        f" SELECT 'default', '{TASK}', CAST('{{\"i\":' || i || '}}' AS BLOB), 'json', {c['priority']},"
        f" '{c['status']}', strftime('%Y-%m-%d %H:%M:%f', 'now', '{modifier}'),"
        f" {c['errors']}, 10, strftime('%Y-%m-%d %H:%M:%f', 'now') FROM s",
        (lo, hi),
    )
    floor.execute("COMMIT")


def count_jobs(backend: str, where: str = "1=1") -> int:
    floor = floor_for(backend)
    (n,) = floor.execute(f"SELECT COUNT(*) FROM batchq_job WHERE {where}")[0]
    floor.close()
    return int(n)
