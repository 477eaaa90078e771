"""What PostgreSQL setups past one server cost in throughput: `batchq run` draining no-op jobs on
a single server, through PgBouncer (transaction mode) in front of it, and on a primary with a
synchronous streaming standby (the multi-host URL), each as a ratio of the single server's.

    .venv/bin/python bench/pgha.py --backend postgresql --jobs 5000 --procs 4 --repeat 3

Every server is private, started here (initdb into a temporary folder, its own port; the
helpers of tests/support/pgha.py, as the failover and PgBouncer scenarios start them), with
the same settings (fsync and synchronous_commit on, initdb's defaults otherwise):
  single        - one server, the URL straight to it (advisory-lock liveness, LISTEN);
  single-lease  - the same server with ?liveness=lease (rows for liveness; the part of the
                  PgBouncer cost that is not PgBouncer's);
  pgbouncer     - PgBouncer 1.18 in transaction mode in front of that server
                  (?pgbouncer=transaction: lease liveness, polling, no prepared statements);
  sync-pair     - a primary whose commits wait for the standby's flush
                  (synchronous_standby_names), through
                  postgresql://h1:p1,h2:p2/db?target_session_attrs=read-write.
Each repetition runs every setup once, interleaved (the machine is shared and noisy: read the
ratios, not the absolute figures): --jobs jobs enqueued (not timed), then --procs `batchq run`
processes started at once; jobs/s = jobs / wall seconds from the first spawn to the last exit.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack

from batchq import Queue

from options import parse, parser
from procs import compile_batchq, run_procs
from report import command_line, emit, table
from settings import BATCHQ, REPO_DIR, bench_env
from stats import med_range

sys.path.insert(0, str(REPO_DIR))  # the tests' private servers
from tests.support.db import create_database  # noqa: E402
from tests.support.pgha import PrimaryStandby, PrivatePgBouncer  # noqa: E402
from tests.support.servers import PrivatePostgreSQL  # noqa: E402

DATABASE = "batchq_bench_pgha"
SETUPS = ("single", "single-lease", "pgbouncer", "sync-pair")
TASK = "noop_jobs:noop"


def drain(url: str, admin_url: str, jobs: int, procs: int) -> float:
    """Enqueue ``jobs`` no-op jobs through ``admin_url`` (the server itself), then time ``procs``
    `batchq run` processes on ``url`` until they have all exited on an empty queue."""
    queue = Queue(admin_url, task_modules=["noop_jobs"])
    queue.init_db()  # (through PgBouncer in transaction mode, init-db is refused)
    conn = queue.backend.conn
    conn.execute("TRUNCATE batchq_job")  # every run starts on a table without dead rows
    for start in range(0, jobs, 5000):
        queue.enqueue_many(TASK, [None] * min(5000, jobs - start))
    conn.execute("VACUUM ANALYZE batchq_job")
    wall = run_procs([[BATCHQ, "run"]] * procs, bench_env("postgresql", BATCHQ_URL=url))
    [left] = conn.execute("SELECT COUNT(*) FROM batchq_job").fetchone()
    queue.close()
    if left:
        raise RuntimeError(f"batchq run left {left} jobs on {url}")
    return wall


def main() -> None:
    ap = parser(__doc__, jobs=5000, procs="4", quick={"jobs": 1000, "repeat": 1})
    ap.add_argument(
        "--setups", default=",".join(SETUPS), help="which setups, comma-separated (default %(default)s)"
    )
    args = parse(ap)
    chosen = args.setups.split(",")
    if "single" not in chosen or not set(chosen) <= set(SETUPS):
        raise SystemExit(f"--setups: some of {', '.join(SETUPS)}, always with single (the ratios' base)")
    if args.backend != "postgresql":
        raise SystemExit("bench/pgha.py measures PostgreSQL setups: --backend postgresql")
    compile_batchq()
    with ExitStack() as stack:
        single = PrivatePostgreSQL()
        stack.callback(single.remove)
        single.start()
        stack.callback(single.stop)
        bouncer = PrivatePgBouncer(single.port)
        bouncer.start()
        stack.callback(bouncer.stop)
        pair = PrimaryStandby(DATABASE)
        stack.callback(pair.stop)
        pair.start()
        direct = single.url.rsplit("/", 1)[0] + "/" + DATABASE
        for url in (direct, pair.url):
            create_database(url)
        urls = {
            "single": (direct, direct),
            "single-lease": (direct + "?liveness=lease", direct),
            "pgbouncer": (bouncer.url(DATABASE), direct),
            "sync-pair": (pair.url, pair.url),
        }
        setups = {name: urls[name] for name in SETUPS if name in chosen}
        results = measure(setups, args.jobs, args.procs, args.repeat)
    report(results, args)


def measure(
    setups: dict[str, tuple[str, str]], jobs: int, procs_list: list[int], repeat: int
) -> dict[tuple[str, int], list[float]]:
    rates: dict[tuple[str, int], list[float]] = {}
    for _ in range(repeat):
        for procs in procs_list:
            for name, (url, admin_url) in setups.items():
                wall = drain(url, admin_url, jobs, procs)
                rates.setdefault((name, procs), []).append(jobs / wall)
                print(f"{name}, {procs} procs: {jobs / wall:,.0f} jobs/s", file=sys.stderr, flush=True)
    return rates


def report(rates: dict[tuple[str, int], list[float]], args: argparse.Namespace) -> None:
    """Each setup's jobs/s, and its ratio to the single server's of the same repetition (paired:
    a noisy moment hits both; the median of these ratios, and their range)."""
    rows = []
    for procs in args.procs:
        base = rates[("single", procs)]
        for name, wanted in rates:  # in the order measured
            if wanted == procs:
                values = rates[(name, procs)]
                paired = [value / single for value, single in zip(values, base)]
                rows.append([name, procs, med_range(values), med_range(paired, "{:.2f}×")])
    text = table(
        ["setup", "procs", "jobs/s median (range)", "vs single, paired by repetition: median (range)"], rows
    )
    note = (
        f"{args.jobs} no-op jobs, {args.repeat} repetition(s), setups interleaved; a shared "
        "2-core machine: read the ratios, not the absolute figures.\n\n" + command_line()
    )
    emit("PostgreSQL past one server: throughput vs a single server", text + "\n\n" + note, "pgha")


if __name__ == "__main__":
    main()
