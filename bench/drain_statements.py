"""Which of a worker's statements read the job table, part by part of one PostgreSQL drain, on a
private cluster with pg_stat_statements (the shared server is not restarted for it).

    .venv/bin/python bench/drain_statements.py --jobs 20000 --parts 4

A throw-away cluster (bench/private_postgresql.py; autovacuum off, as on the shared server, and
pg_stat_statements preloaded) gets --jobs no-op jobs (enqueue_many, untimed); one `batchq run
--max-jobs N` after another drains them in --parts equal parts. After each part: its seconds, the
job table's heap blocks per job (pg_statio), and the statements that read the most blocks, with
calls, blocks per job and total execution time; both counters are reset between parts.

Each part also gives the WAL written per job (pg_current_wal_lsn(): the cluster's own, so this
drain's). Since migration 029 the claim index holds 'ready' rows only, (queue, priority DESC,
run_at, id) WHERE status = 'ready', and a claimed job's new version enters no claim-index entry.
--full-claim-index puts back the claim index before 029, (queue, status, priority DESC, run_at,
id) over every row, without batchq_job_parked: the drain as it was (issue 29), to compare.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time

from private_postgresql import private_cluster
from settings import BATCHQ, TASK, bench_env

SETTINGS = {
    "shared_preload_libraries": "pg_stat_statements",
    "autovacuum": "off",
    "pg_stat_statements.track": "all",
}
TOP = (
    "SELECT calls, shared_blks_hit + shared_blks_read, total_exec_time,"
    " left(regexp_replace(query, '\\s+', ' ', 'g'), 80) FROM pg_stat_statements"
    " WHERE query NOT LIKE '%%pg_stat%%' ORDER BY 2 DESC LIMIT %s"
)
FULL_CLAIM_INDEX = (
    "DROP INDEX batchq_job_claim",
    "DROP INDEX batchq_job_parked",
    "CREATE INDEX batchq_job_claim ON batchq_job (queue, status, priority DESC, run_at, id)",
)
HEAP = "SELECT heap_blks_hit + heap_blks_read FROM pg_statio_user_tables WHERE relname = 'batchq_job'"
WAL = "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--parts", type=int, default=4)
    parser.add_argument("--top", type=int, default=4, help="statements shown per part")
    parser.add_argument(
        "--full-claim-index", action="store_true", help="the claim index before migration 029, on every row"
    )
    args = parser.parse_args()
    import psycopg

    from batchq import Queue

    step = args.jobs // args.parts
    with private_cluster(SETTINGS) as url:
        queue = Queue(url, task_modules=["noop_jobs"])
        queue.init_db()
        if args.full_claim_index:
            with psycopg.connect(url, autocommit=True) as conn:
                for statement in FULL_CLAIM_INDEX:
                    conn.execute(statement)
        queue.enqueue_many(TASK, [None] * args.jobs)
        queue.close()
        env = {**bench_env("postgresql"), "BATCHQ_URL": url}
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_stat_statements")
            for part in range(args.parts):
                conn.execute("SELECT pg_stat_statements_reset(), pg_stat_reset()")
                (wal_before,) = conn.execute(WAL).fetchone()
                started = time.monotonic()
                subprocess.run([BATCHQ, "run", "--max-jobs", str(step)], env=env, check=True)
                took = time.monotonic() - started
                time.sleep(1.0)  # a backend reports its counters at most this late
                (heap,) = conn.execute(HEAP).fetchone()
                (wal,) = conn.execute(WAL).fetchone()
                done = f"{part * step:,} done before"
                wal_per_job = (wal - wal_before) / step
                figures = f"{took:.1f} s, heap {heap / step:.1f} blocks/job, WAL {wal_per_job:.0f} B/job"
                print(f"\npart {part} ({done}): {figures}\n")
                print("| calls | blocks/job | exec ms | statement |\n|---|---|---|---|")
                for calls, blocks, ms, query in conn.execute(TOP, (args.top,)):
                    print(f"| {calls} | {blocks / step:.1f} | {ms:.0f} | `{query}` |")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
