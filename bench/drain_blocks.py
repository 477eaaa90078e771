"""Block reads per job, by table and index, in each part of one PostgreSQL drain: does the claim
path cost more per job as the drain goes on (the dead rows of the jobs already done piling up)?

    .venv/bin/python bench/drain_blocks.py --jobs 20000 --parts 4

A fresh job table gets --jobs no-op jobs (enqueue_many, untimed); then one `batchq run
--max-jobs N` after another drains it in --parts equal parts. After each part the server's
counters (pg_statio_user_tables and pg_statio_user_indexes: blocks hit plus read) give each
table's and index's blocks per job in that part, and pg_current_wal_lsn() the WAL bytes per job,
with the part's wall time. Block counts do not depend on the machine's load as timings do; a
claim that walks more dead index entries as the drain proceeds shows as a growing count for
batchq_job_claim. The counters are the server's (BENCH_POSTGRESQL_URL names the database): run
nothing else on it meanwhile.

The plain cycle (bench/plain_cycle.py: its own table, one index on (status, priority, id)) drains
the same number of jobs in the same parts, one job per claim and DELETE, in this process: its
rows come after batchq's, the floor for what one drained job must read.
"""

from __future__ import annotations

import argparse
import subprocess
import time
from typing import Any

from loads import reset
from plain_cycle import PlainCycle
from settings import BATCHQ, TASK, bench_env, url_for

COUNTERS = (
    "SELECT 'index ' || indexrelname, idx_blks_hit + idx_blks_read FROM pg_statio_user_indexes "
    "UNION ALL SELECT 'table ' || relname, heap_blks_hit + heap_blks_read FROM pg_statio_user_tables"
)
WAL = "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')"
WAL_BYTES = "WAL bytes"
STATS_FLUSH_SECONDS = 1.0  # a backend reports its counters at most this late (PostgreSQL 15)


def counters(conn: Any) -> dict[str, int]:
    """Blocks hit or read so far, by table and index (the snapshot cleared: read afresh), and
    the WAL written so far in bytes (the whole server's: run nothing else meanwhile)."""
    conn.execute("SELECT pg_stat_clear_snapshot()")
    found = {name: int(blocks) for name, blocks in conn.execute(COUNTERS).fetchall()}
    (wal,) = conn.execute(WAL).fetchone()
    return {**found, WAL_BYTES: int(wal)}


def drain_in_parts(conn: Any, jobs: int, parts: int, drain: Any) -> list[tuple[float, dict[str, float]]]:
    """Drain ``jobs`` in ``parts`` calls of ``drain(step)``; each part's seconds and blocks per job."""
    step = jobs // parts
    time.sleep(STATS_FLUSH_SECONDS)
    before, rows = counters(conn), []
    for _ in range(parts):
        started = time.monotonic()
        drain(step)
        took = time.monotonic() - started
        time.sleep(STATS_FLUSH_SECONDS)
        after = counters(conn)
        rows.append((took, {k: (after[k] - before.get(k, 0)) / step for k in after}))
        before = after
    return rows


def batchq_enqueue(jobs: int) -> None:
    from batchq import Queue

    queue = Queue(url_for("postgresql"), task_modules=["noop_jobs"])
    queue.enqueue_many(TASK, [None] * jobs)
    queue.close()


def plain_drain(cycle: PlainCycle, step: int) -> None:
    for _ in range(step):
        (job,) = cycle.claim(1)
        cycle.ack([job[0]])


def table(title: str, step: int, rows: list[tuple[float, dict[str, float]]]) -> None:
    names = sorted({k for _, per_job in rows for k, v in per_job.items() if v >= 0.1})
    print(f"\n{title}\n")
    print(f"| part (jobs done before it) | seconds | {' | '.join(names)} |")
    print("|---" * (len(names) + 2) + "|")
    for part, (took, per_job) in enumerate(rows):
        cells = " | ".join(f"{per_job.get(name, 0):.1f}" for name in names)
        print(f"| {part} ({part * step:,}) | {took:.1f} | {cells} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--parts", type=int, default=4)
    args = parser.parse_args()
    import psycopg

    url, step = url_for("postgresql"), args.jobs // args.parts
    reset("postgresql")  # a fresh heap and indexes
    batchq_enqueue(args.jobs)
    run = [BATCHQ, "run", "--max-jobs", str(step)]
    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        rows = drain_in_parts(
            conn,
            args.jobs,
            args.parts,
            lambda _: subprocess.run(run, env=bench_env("postgresql"), check=True),
        )
        table("batchq: `batchq run --max-jobs N` per part, blocks per job", step, rows)
        cycle = PlainCycle("postgresql")
        cycle.recreate()
        for start in range(0, args.jobs, 100):
            cycle.enqueue_many([None] * min(100, args.jobs - start))
        rows = drain_in_parts(conn, args.jobs, args.parts, lambda n: plain_drain(cycle, n))
        cycle.close()
        table("the plain cycle, in this process, blocks per job", step, rows)


if __name__ == "__main__":
    main()
