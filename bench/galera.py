"""What a 3-node MariaDB Galera cluster costs against the single server (issue 14).

    .venv/bin/python bench/galera.py --jobs 10000 --procs 6 --repeat 2

Starts a private 3-node cluster on this machine (tests/support/galera.py: galera-4, on free
ports), then, each repetition, drains --jobs
no-op jobs, loaded untimed, with --procs `batchq run` processes started at once (jobs/s =
jobs / wall seconds from the first spawn to the last exit), four ways, interleaved:
  single server       the shared MariaDB at 127.0.0.1:3306 (BENCH_MYSQL_URL), row claims;
  Galera, 1 node      every worker on node 1 (the other two replicate: one writer);
  Galera, 3 nodes     the workers spread over the nodes (multi-writer): claims on different
                      nodes collide and fail certification, and are retried;
  3 nodes, partition  spread, with `run --claim partition` over --partitions partitions.
The three nodes and the workers share this machine's cores: the cluster pays for replication
and certification here, but gains nothing from more machines. Figures are noisy (other work
runs at the same time); the ratios are what to read.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from batchq import Queue

import settings
from floors import floor_for
from loads import bulk_load, count_jobs, reset
from options import parse, parser
from procs import compile_batchq
from report import command_line, emit, table
from settings import BATCHQ, REPO_DIR, bench_env
from stats import med_range, median, ratio

sys.path.insert(0, str(REPO_DIR))
from tests.support.db import create_database  # noqa: E402 - the tests' own helpers
from tests.support.galera import GaleraCluster  # noqa: E402

MODES = ("single server", "Galera, 1 node", "Galera, 3 nodes", "3 nodes, partition")
DATABASE = "batchq_bench"


@contextmanager
def benchmark_url(url: str) -> Iterator[None]:
    """Point the benchmark's MySQL URL (loads, floors, url_for) at ``url`` for a while."""
    saved = settings.URLS["mysql"]
    settings.URLS["mysql"] = url
    try:
        yield
    finally:
        settings.URLS["mysql"] = saved


def drain(urls: list[str], mode: str, jobs: int, procs: int, partitions: int) -> float:
    """Load ``jobs`` through urls[0], drain them with ``procs`` workers over ``urls``."""
    with benchmark_url(urls[0]):
        reset("mysql")
        queue = Queue(urls[0])
        queue.set_partitions(partitions if mode.endswith("partition") else 0)
        queue.close()
        bulk_load("mysql", jobs)
        if mode.endswith("partition"):  # as enqueue would have placed them
            floor = floor_for("mysql")
            floor.execute(f"UPDATE batchq_job SET claim_partition = id % {int(partitions)}")
            floor.close()
        cmd = [BATCHQ, "run", "--max-procs-per-host", str(procs)]
        if mode.endswith("partition"):
            cmd += ["--claim", "partition"]
        wall = _run_spread(cmd, urls, procs)
        left = count_jobs("mysql")
    if left:
        raise RuntimeError(f"{mode}: {left} jobs left")
    return jobs / wall


def _run_spread(cmd: list[str], urls: list[str], procs: int) -> float:
    """``procs`` workers, round-robin over ``urls``, all started at once; the wall seconds."""
    t0 = time.perf_counter()
    workers = [
        subprocess.Popen(cmd, env=bench_env("mysql", BATCHQ_URL=urls[i % len(urls)]), cwd=REPO_DIR)
        for i in range(procs)
    ]
    for worker in workers:
        if worker.wait(timeout=600) != 0:
            raise RuntimeError(f"a worker exited {worker.returncode}")
    return time.perf_counter() - t0


def mode_urls(mode: str, single: str, nodes: list[str]) -> list[str]:
    if mode == "single server":
        return [single]
    return nodes[:1] if mode == "Galera, 1 node" else nodes


def main() -> None:
    ap = parser(__doc__, repeat=2, jobs=10_000, procs="6")
    ap.add_argument("--partitions", type=int, default=6, help="partitions (default %(default)s)")
    args = parse(ap, ["--backend", "mysql", *sys.argv[1:]])  # MariaDB only
    compile_batchq()
    single = settings.url_for("mysql")
    cluster = GaleraCluster()
    cluster.start()
    try:
        nodes = cluster.urls(DATABASE)
        create_database(nodes[0])
        create_database(single)
        rates: dict[tuple[int, str], list[float]] = {}
        for _ in range(args.repeat):
            for procs in args.procs:
                for mode in MODES:
                    rate = drain(mode_urls(mode, single, nodes), mode, args.jobs, procs, args.partitions)
                    rates.setdefault((procs, mode), []).append(rate)
                    print(f"{procs} procs, {mode}: {rate:,.0f} jobs/s", flush=True)
    finally:
        cluster.stop()
        cluster.remove()
    rows = []
    for procs in args.procs:
        base = median(rates[(procs, "single server")])
        for mode in MODES:
            got = rates[(procs, mode)]
            rows.append([procs, mode, med_range(got), ratio(median(got), base)])
    header = ["processes", "setup", "jobs/s (median, range)", "vs single server"]
    text = table(header, rows) + f"\n\n{command_line()}\n\nMariaDB 10.11, galera-4, 3 nodes on one machine"
    emit(f"Galera against one server, {args.jobs:,} jobs", text, "galera")


if __name__ == "__main__":
    main()
