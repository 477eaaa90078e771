"""Claim speed in the steady state: a drain on a fresh table against the same drain after the
table has processed a million jobs (dead tuples on PostgreSQL, purge lag on InnoDB).

    .venv/bin/python bench/steady_state.py --backend mysql|postgresql|sqlite --jobs 20000 --repeat 2
    .venv/bin/python bench/steady_state.py --backend postgresql --private-postgresql autovacuum=off
    .venv/bin/python bench/steady_state.py --backend mysql --hold-snapshot

Each repetition:
  fresh   the job table recreated (TRUNCATE on the servers; SQLite: a new database file),
          --jobs no-op jobs enqueued with enqueue_many (untimed), the table analysed, then one
          `batchq run` drains them; jobs/s = jobs / wall seconds from its spawn to its exit (as
          bench/vs_plain.py's `run`, 1 process).
  age     --age jobs pushed through the same table by batchq itself: rounds of --round jobs,
          each enqueued with enqueue_many (lists of 1,000) and drained by --age-procs x
          `batchq run --batch --age-batch`, so rows are really inserted, claimed and deleted.
  aged    the same load, ANALYZE (never VACUUM: the dead rows are the point) and timed drain.
The evidence is read before each timed drain and after the aged one: PostgreSQL n_live_tup,
n_dead_tup, heap and index bytes, vacuums (pg_stat_user_tables; its counts lag by up to a
second); InnoDB's history list length (INNODB_METRICS trx_rseg_history_len) and the table's file
size; SQLite page_count and freelist_count. The claim's plan on the loaded fresh and aged tables
is shown as bench/scale.py prints it (PostgreSQL: EXPLAIN (ANALYZE, BUFFERS), rolled back).

Conditions:
  --private-postgresql autovacuum=on|off[,name=value...]
                 a throw-away PostgreSQL cluster (initdb into a temporary folder, a free port)
                 with those settings, stopped and deleted at the end; the shared server's
                 settings are never changed. Without it, BENCH_POSTGRESQL_URL's server as it is.
  --hold-snapshot  MySQL: another connection holds a REPEATABLE READ read view (START
                 TRANSACTION WITH CONSISTENT SNAPSHOT) from before the ageing until after the
                 aged drain, as a long report or a forgotten transaction does in production:
                 purge cannot remove what the snapshot may see. PostgreSQL: the same with a
                 REPEATABLE READ transaction (its xmin holds every vacuum back).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from batchq import Queue
from batchq.core.config import parse_url

import settings
from floors import floor_for
from loads import count_jobs, reset
from machine import server_info
from options import parse, parser
from private_postgresql import parse_settings, private_cluster
from procs import compile_batchq, run_procs
from queries import bench_query
from report import command_line, emit, table
from scale import explain
from settings import BATCHQ, TASK, bench_env, url_for
from stats import med_range, median, ratio
from vs_plain import batchq_url

ENQUEUE_CHUNK = 1000  # jobs per enqueue_many call

STATE_COLUMNS = {
    "postgresql": [
        "n_live_tup",
        "n_dead_tup",
        "heap_bytes",
        "index_bytes",
        "vacuum_count",
        "autovacuum_count",
    ],
    "mysql": ["history_length", "file_bytes"],
    "sqlite": ["page_count", "freelist_count"],
}


def fresh_table(backend: str) -> None:
    """A freshly created job table: TRUNCATE on the servers (a new heap, new indexes), a new
    database file on SQLite."""
    if backend == "sqlite":
        path = Path(parse_url(url_for(backend)).database)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    reset(backend)


def enqueue(backend: str, n: int, start: int = 0) -> None:
    """n no-op jobs through batchq's enqueue_many, in lists of ENQUEUE_CHUNK."""
    q = Queue(batchq_url(backend), task_modules="noop_jobs")
    for lo in range(start, start + n, ENQUEUE_CHUNK):
        q.enqueue_many(TASK, [{"i": i} for i in range(lo, min(lo + ENQUEUE_CHUNK, start + n))])
    q.close()


def run_query(backend: str, name: str) -> list[tuple]:
    floor = floor_for(backend)
    rows = floor.execute(bench_query(backend, name))
    floor.close()
    return rows


def table_state(backend: str) -> dict[str, Any]:
    row = run_query(backend, "table_state")[0]
    return dict(zip(STATE_COLUMNS[backend], row))


def drain(backend: str, jobs: int, procs: int = 1, batch: int = 1) -> float:
    """Drain the loaded jobs with ``procs`` x `batchq run --batch ``batch```; jobs/s."""
    cmd = [BATCHQ, "run", "--batch", str(batch)]
    wall = run_procs([cmd] * procs, bench_env(backend, BATCHQ_URL=batchq_url(backend)), timeout=3600)
    left = count_jobs(backend)
    if left:
        raise RuntimeError(f"batchq run left {left} jobs")
    return jobs / wall


def loaded(backend: str, jobs: int) -> tuple[dict[str, Any], str]:
    """Enqueue the measured jobs and analyse the table; (the table's state, the claim's plan)."""
    enqueue(backend, jobs)
    run_query(backend, "analyze_jobs")
    return table_state(backend), explain(backend)


def age(backend: str, total: int, round_size: int, procs: int, batch: int) -> float:
    """Push ``total`` jobs through the table in rounds; returns the seconds it took."""
    t0 = time.perf_counter()
    for lo in range(0, total, round_size):
        n = min(round_size, total - lo)
        enqueue(backend, n, start=lo)
        drain(backend, n, procs, batch)
        print(f"#   aged {lo + n:,} jobs, {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    return time.perf_counter() - t0


@contextmanager
def held_snapshot(backend: str) -> Iterator[None]:
    """A REPEATABLE READ transaction with a read view, open on its own connection meanwhile."""
    floor = floor_for(backend)
    try:
        if backend == "mysql":
            for name in ("read_view_isolation", "read_view_open", "read_view_touch"):
                floor.execute(bench_query(backend, name))
        else:
            floor.begin()
            for name in ("snapshot_isolation", "read_view_touch"):
                floor.execute(bench_query(backend, name))
        yield
    finally:
        floor.conn.rollback()
        floor.close()


def main() -> None:
    ap = parser(
        __doc__,
        repeat=2,
        jobs=20000,
        jobs_help="jobs per timed drain",
        quick={"jobs": 2000, "age": 20000, "round": 10000, "repeat": 1},
    )
    ap.add_argument(
        "--age",
        type=int,
        default=1_000_000,
        help="jobs pushed through between fresh and aged (default %(default)s)",
    )
    ap.add_argument(
        "--round",
        type=int,
        default=50_000,
        help="jobs enqueued then drained per ageing round (default %(default)s)",
    )
    ap.add_argument(
        "--age-procs",
        type=int,
        default=2,
        help="`batchq run` processes per ageing round (default %(default)s)",
    )
    ap.add_argument(
        "--age-batch", type=int, default=100, help="--batch of the ageing workers (default %(default)s)"
    )
    ap.add_argument(
        "--private-postgresql",
        type=parse_settings,
        metavar="NAME=VALUE[,...]",
        help="run on a throw-away cluster with these settings",
    )
    ap.add_argument(
        "--hold-snapshot",
        action="store_true",
        help="hold a REPEATABLE READ read view during the ageing and the aged drain",
    )
    args = parse(ap)
    if args.private_postgresql is not None and args.backend != "postgresql":
        ap.error("--private-postgresql goes with --backend postgresql")
    if args.hold_snapshot and args.backend == "sqlite":
        ap.error("--hold-snapshot: MySQL and PostgreSQL only (a SQLite reader does not hold rows back)")
    compile_batchq()
    cluster = (
        private_cluster(args.private_postgresql) if args.private_postgresql is not None else nullcontext(None)
    )
    with cluster as private_url:
        if private_url:
            settings.URLS["postgresql"] = private_url
        measure(args)


def measure(args: Any) -> None:
    b = args.backend
    fresh_rates: list[float] = []
    aged_rates: list[float] = []
    states: list[list[Any]] = []
    plans: list[tuple[str, str]] = []
    for rep in range(args.repeat):
        fresh_table(b)
        state, plan = loaded(b, args.jobs)
        states.append([f"{rep + 1}: fresh, loaded", *state.values()])
        fresh_rates.append(drain(b, args.jobs))
        print(f"# rep {rep + 1} fresh: {fresh_rates[-1]:,.0f} jobs/s", file=sys.stderr, flush=True)
        with held_snapshot(b) if args.hold_snapshot else nullcontext():
            seconds = age(b, args.age, args.round, args.age_procs, args.age_batch)
            states.append([f"{rep + 1}: after {args.age:,} jobs ({seconds:.0f}s)", *table_state(b).values()])
            aged_state, aged_plan = loaded(b, args.jobs)
            states.append([f"{rep + 1}: aged, loaded", *aged_state.values()])
            aged_rates.append(drain(b, args.jobs))
            states.append([f"{rep + 1}: aged, drained", *table_state(b).values()])
        print(f"# rep {rep + 1} aged: {aged_rates[-1]:,.0f} jobs/s", file=sys.stderr, flush=True)
        if rep == 0:
            plans = [("fresh", plan), ("aged", aged_plan)]
    condition = describe_condition(args)
    rows = [
        [
            condition,
            med_range(fresh_rates),
            med_range(aged_rates),
            ratio(median(aged_rates), median(fresh_rates)),
        ]
    ]
    text = table(
        [
            f"{b}: medians (min–max), jobs/s, `batchq run` 1 process",
            "fresh",
            f"after {args.age:,} jobs",
            "aged / fresh",
        ],
        rows,
    )
    text += "\n\n" + table(["state", *STATE_COLUMNS[b]], states)
    text += "".join(f"\n\nClaim plan, {label} table (repetition 1):\n\n{p}" for label, p in plans)
    info = ", ".join(f"{k} {v}" for k, v in server_info(b).items())
    emit(
        f"Steady state, {b}, {condition}",
        f"{command_line()}\n\n{text}\n\nServer: {info}",
        f"steady_state_{b}",
    )


def describe_condition(args: Any) -> str:
    parts = []
    if args.backend == "postgresql":
        autovacuum = run_query("postgresql", "table_state")[0][-1]
        where = "private cluster" if args.private_postgresql is not None else "shared server"
        parts.append(f"autovacuum {autovacuum} ({where})")
        options = run_query("postgresql", "table_options")[0][0]
        parts.append(f"table options: {options or 'none'}")
    if args.hold_snapshot:
        parts.append("REPEATABLE READ snapshot held during ageing and aged drain")
    elif args.backend == "mysql":
        parts.append("purge unhindered")
    return "; ".join(parts) or "defaults"


if __name__ == "__main__":
    main()
