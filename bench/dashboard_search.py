"""What the dashboard's search costs on a job table of a million rows, against the unbounded
scan it avoids.

    .venv/bin/python bench/dashboard_search.py --backend sqlite|mysql|postgresql --jobs 1000000 --rounds 5

Empties batchq_job and fills it with one INSERT ... SELECT: --jobs rows, 5% failed (each with a
last error), the rest ready, each with a small JSON payload naming its order number, due one
second apart. Then times batchq.dashboard.search.find (what /search runs: the matches and the
window's count) each --rounds times: by id, by task, and by text that matches one row or none,
in the failed rows and in the ready backlog; and, for comparison, one unbounded text scan of the
whole table (what the window avoids: the dashboard never runs it). Prints median and min-max in
ms. Uses BENCH_<BACKEND>_URL (bench/settings.py); never a test database.

Right after a million-row INSERT (and the DELETE of the last run's rows) a server is still busy
with it for minutes (InnoDB purges and flushes): `--keep` leaves the rows, and a later
`--reuse` run times them on a settled table, as an operator's table is.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from batchq import Queue
from batchq.dashboard.search import SEARCH_WINDOW, SearchTerms, find

from report import command_line, table
from settings import url_for
from stats import median

# One row per n in 0..jobs-1: every 20th failed; payload {"order": "ORD-n"}; due n seconds ago.
DIGITS = "(" + " UNION ALL ".join(f"SELECT {k} AS k" for k in range(10)) + ")"
SEQ = "WITH RECURSIVE d(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM d WHERE k < 999)"
FILL = {
    "mysql": """
INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at, created_at,
                        error_count, max_errors, last_error)
SELECT 'bench_search', IF(n %% 20 = 0, 'bench:fails', 'bench:works'), CONCAT('{"order": "ORD-', n, '"}'),
       'json', 0, IF(n %% 20 = 0, 'failed', 'ready'), UTC_TIMESTAMP(6) - INTERVAL n SECOND, UTC_TIMESTAMP(6),
       IF(n %% 20 = 0, 10, 0), 10, IF(n %% 20 = 0, CONCAT('ValueError: gateway said no to ERR-', n), NULL)
FROM (SELECT a.k * 100000 + b.k * 10000 + c.k * 1000 + e.k * 100 + f.k * 10 + g.k AS n
      FROM """
    + " CROSS JOIN ".join(f"{DIGITS} AS {t}" for t in "abcefg")
    + """) AS s
WHERE n < %(jobs)s""",
    "postgresql": """
INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at, created_at,
                        error_count, max_errors, last_error)
SELECT 'bench_search', CASE WHEN n %% 20 = 0 THEN 'bench:fails' ELSE 'bench:works' END,
       convert_to('{"order": "ORD-' || n || '"}', 'UTF8'), 'json', 0,
       CASE WHEN n %% 20 = 0 THEN 'failed' ELSE 'ready' END, now() - n * interval '1 second', now(),
       CASE WHEN n %% 20 = 0 THEN 10 ELSE 0 END, 10,
       CASE WHEN n %% 20 = 0 THEN 'ValueError: gateway said no to ERR-' || n END
FROM generate_series(0, %(jobs)s - 1) AS n""",
    "sqlite": SEQ
    + """
INSERT INTO batchq_job (queue, task, payload, serializer, priority, status, run_at, created_at,
                        error_count, max_errors, last_error)
SELECT 'bench_search', CASE WHEN n % 20 = 0 THEN 'bench:fails' ELSE 'bench:works' END,
       CAST('{"order": "ORD-' || n || '"}' AS BLOB), 'json', 0,
       CASE WHEN n % 20 = 0 THEN 'failed' ELSE 'ready' END,
       strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || n || ' seconds'), strftime('%Y-%m-%d %H:%M:%f', 'now'),
       CASE WHEN n % 20 = 0 THEN 10 ELSE 0 END, 10,
       CASE WHEN n % 20 = 0 THEN 'ValueError: gateway said no to ERR-' || n END
FROM (SELECT a.k * 1000 + b.k AS n FROM d AS a CROSS JOIN d AS b) WHERE n < :jobs""",
}
# What the window avoids: every payload of the table read for a text.
SCAN = {
    "mysql": "SELECT COUNT(*) FROM batchq_job WHERE LOCATE(%(needle)s, payload) > 0",
    "postgresql": "SELECT COUNT(*) FROM batchq_job WHERE position(%(needle)s::bytea IN payload) > 0",
    "sqlite": "SELECT COUNT(*) FROM batchq_job WHERE instr(CAST(payload AS BLOB), :needle) > 0",
}


def timed(action: Callable[[], object], rounds: int) -> list[float]:
    runs = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        runs.append((time.perf_counter() - start) * 1000)
    return runs


def run_sql(queue: Queue, statement: str, params: dict[str, object]) -> None:
    backend = queue.backend
    with backend.errors():
        cur = backend.conn.cursor()
        cur.execute(statement, params)
        if cur.description:
            cur.fetchall()
        cur.close()
        if backend.dialect != "postgresql" or not backend.conn.autocommit:
            backend.conn.commit()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", required=True, choices=["sqlite", "mysql", "postgresql"])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="leave the rows (to EXPLAIN, or --reuse)")
    parser.add_argument("--reuse", action="store_true", help="time the rows a --keep run left, loading none")
    args = parser.parse_args()
    queue = Queue(url_for(args.backend))
    queue.init_db()
    start = time.perf_counter()
    if not args.reuse:
        run_sql(queue, "DELETE FROM batchq_job", {})
        run_sql(queue, FILL[args.backend], {"jobs": args.jobs})
    # PostgreSQL: VACUUM sets the fresh rows' hint bits, as a table that has been there a while has them.
    run_sql(
        queue,
        {"mysql": "ANALYZE TABLE batchq_job", "postgresql": "VACUUM ANALYZE batchq_job"}.get(
            args.backend, "ANALYZE"
        ),
        {},
    )
    loaded = time.perf_counter() - start
    backend, n = queue.backend, args.jobs
    first = backend.fetchone("dashboard_search_id", {"id": 0})  # warms the connection
    with backend.errors():
        cur = backend.conn.cursor()
        cur.execute("SELECT MIN(id), COUNT(*) FROM batchq_job")
        low, count = cur.fetchone()
        cur.close()
    assert first is None and count == n, f"the table holds {count} rows, not --jobs {n}"
    oldest_failed = (n - 1) // 20 * 20  # the failed row due longest ago: outside the window
    in_window = 20 * 100  # a failed row among the newest 10,000 failed
    cases: dict[str, SearchTerms] = {
        "by id": SearchTerms(low + n // 2, "failed", None, None, None),
        "failed, by task": SearchTerms(None, "failed", None, "bench:fails", None),
        "failed, text in a payload (1 match)": SearchTerms(None, "failed", None, None, f'"ORD-{in_window}"'),
        "failed, text in a last error (1 match)": SearchTerms(None, "failed", None, None, f"ERR-{in_window}"),
        "failed, text matching none (reads the whole window)": SearchTerms(
            None, "failed", None, None, "nowhere"
        ),
        "failed, text beyond the window (not found)": SearchTerms(
            None, "failed", None, None, f'"ORD-{oldest_failed}"'
        ),
        "ready, by task, queue named": SearchTerms(None, "ready", "bench_search", "bench:works", None),
        "ready, text matching none": SearchTerms(None, "ready", None, None, "nowhere"),
    }
    rows = []
    for label, terms in cases.items():
        found = find(backend, terms)
        ms = timed(lambda terms=terms: find(backend, terms), args.rounds)  # type: ignore[misc]
        rows.append(
            [label, f"{median(ms):.2f}", f"{min(ms):.2f}-{max(ms):.2f}", len(found.rows), found.scope]
        )
    scan = SCAN[args.backend]
    ms = timed(lambda: run_sql(queue, scan, {"needle": b"nowhere"}), max(1, args.rounds // 2))
    rows.append(
        [
            "(unbounded scan of every payload: not run by the dashboard)",
            f"{median(ms):.1f}",
            f"{min(ms):.1f}-{max(ms):.1f}",
            0,
            f"all {n:,} rows",
        ]
    )
    print(
        f"{args.backend}: {n:,} jobs ({n // 20:,} failed, the rest ready), loaded in {loaded:.0f} s; "
        f"window {SEARCH_WINDOW:,}; {args.rounds} rounds"
    )
    print(table(["search", "ms (median)", "min-max", "matches", "searched"], rows))
    print(command_line())
    if not args.keep:
        run_sql(queue, "DELETE FROM batchq_job", {})
    queue.close()


if __name__ == "__main__":
    main()
