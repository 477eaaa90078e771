"""Block reads per job, by table and index, in each part of one PostgreSQL drain: does the claim
path cost more per job as the drain goes on (the dead rows of the jobs already done piling up)?

    .venv/bin/python bench/drain_blocks.py --jobs 20000 --parts 4

A fresh job table gets --jobs no-op jobs (enqueue_many, untimed); then one `batchq run
--max-jobs N` after another drains it in --parts equal parts. After each part the server's
counters (pg_statio_user_tables and pg_statio_user_indexes: blocks hit plus read) give each
table's and index's blocks per job in that part, with the part's wall time. Block counts do not
depend on the machine's load as timings do; a claim that walks more dead index entries as the
drain proceeds shows as a growing count for batchq_job_claim. The counters are the database's
(BENCH_POSTGRESQL_URL names it): run nothing else in it meanwhile.
"""

from __future__ import annotations

import argparse
import subprocess
import time
from typing import Any

from loads import reset
from settings import BATCHQ, TASK, bench_env, url_for

COUNTERS = (
    "SELECT 'index ' || indexrelname, idx_blks_hit + idx_blks_read FROM pg_statio_user_indexes "
    "UNION ALL SELECT 'table ' || relname, heap_blks_hit + heap_blks_read FROM pg_statio_user_tables"
)
STATS_FLUSH_SECONDS = 1.0  # a backend reports its counters at most this late (PostgreSQL 15)


def counters(conn: Any) -> dict[str, int]:
    """Blocks hit or read so far, by table and index (the snapshot cleared: read afresh)."""
    conn.execute("SELECT pg_stat_clear_snapshot()")
    return {name: int(blocks) for name, blocks in conn.execute(COUNTERS).fetchall()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--parts", type=int, default=4)
    args = parser.parse_args()
    import psycopg

    from batchq import Queue

    url = url_for("postgresql")
    reset("postgresql")  # a fresh heap and indexes
    queue = Queue(url, task_modules=["noop_jobs"])
    queue.enqueue_many(TASK, [None] * args.jobs)
    queue.close()
    step = args.jobs // args.parts
    rows: list[tuple[int, float, dict[str, float]]] = []
    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        time.sleep(STATS_FLUSH_SECONDS)
        before = counters(conn)
        for part in range(args.parts):
            started = time.monotonic()
            subprocess.run([BATCHQ, "run", "--max-jobs", str(step)], env=bench_env("postgresql"), check=True)
            took = time.monotonic() - started
            time.sleep(STATS_FLUSH_SECONDS)
            after = counters(conn)
            rows.append((part, took, {k: (after[k] - before.get(k, 0)) / step for k in after}))
            before = after
    names = sorted({k for _, _, per_job in rows for k, v in per_job.items() if v >= 0.1})
    print(f"| part (jobs done before it) | seconds | {' | '.join(names)} |")
    print("|---" * (len(names) + 2) + "|")
    for part, took, per_job in rows:
        cells = " | ".join(f"{per_job.get(name, 0):.1f}" for name in names)
        print(f"| {part} ({part * step:,}) | {took:.1f} | {cells} |")


if __name__ == "__main__":
    main()
