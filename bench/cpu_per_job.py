"""CPU per job, in-process: batchq's Worker.run() against the fused floor loop, same cycle.

    .venv/bin/python bench/cpu_per_job.py --backend sqlite --jobs 10000 --repeat 3 \
        [--batch 100] [--synchronous OFF] [--timeout 1h] [--profile FILE]

Where process.py says how fast, this says where the difference goes: user and system CPU
per job of one process draining --jobs pre-loaded no-op jobs, with no process start-up in the
figure. Each system gets a fresh table loaded the same way (bulk_load, then a fresh
connection); `--synchronous OFF` (SQLite only) takes the fsync out, leaving the Python and
SQL work alone. The Worker is batchq's own (`batchq.runtime.worker.Worker`, as `batchq run` uses it);
`--timeout` runs every job under that timeout (`batchq run --timeout`): the watchdog's cost.
`--batch N` claims N jobs per transaction on both sides (`batchq run --batch N`; the floor's
batch claim). `--profile FILE` also runs one more batchq drain under cProfile (not timed) and
saves its stats to FILE (read with `python -m pstats FILE`).
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from functools import partial

from batchq import Queue
from batchq.core.config import parse_duration
from batchq.runtime.worker import RunOptions, Worker

from floors import floor_for
from loads import bulk_load, reset
from noop_jobs import noop
from options import parse, parser
from report import command_line, emit, table
from settings import url_for
from stats import med_range


def measure(drain: Callable[[], None], jobs: int) -> tuple[float, float, float]:
    """(jobs/s, user µs/job, system µs/job) of one drain."""
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    drain()
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    return jobs / wall, (r1.ru_utime - r0.ru_utime) / jobs * 1e6, (r1.ru_stime - r0.ru_stime) / jobs * 1e6


def floor_drain(backend: str, synchronous: str | None, batch: int = 1) -> Callable[[], None]:
    floor = floor_for(backend)
    if synchronous:
        floor.execute(f"PRAGMA synchronous = {synchronous}")

    def drain() -> None:
        floor.drain("bench:0", noop, limit=batch)
        floor.close()

    return drain


def batchq_drain(
    backend: str, synchronous: str | None, timeout: float | None = None, batch: int = 1
) -> Callable[[], None]:
    queue = Queue(url_for(backend), task_modules="noop_jobs")
    if synchronous:
        queue.backend.conn.execute(f"PRAGMA synchronous = {synchronous}")
    worker = Worker(queue, RunOptions(timeout=timeout, batch_size=batch))

    def drain() -> None:
        worker.run()
        queue.close()

    return drain


def profile(make: Callable[[], Callable[[], None]], backend: str, jobs: int, path: str) -> None:
    """One more batchq drain of ``jobs``, under cProfile (its figures are not in the table)."""
    import cProfile

    reset(backend)
    bulk_load(backend, jobs)
    drain = make()
    profiler = cProfile.Profile()
    profiler.runcall(drain)
    profiler.dump_stats(path)


def main() -> None:
    ap = parser(__doc__, jobs=10000, batch=1, quick={"jobs": 2000, "repeat": 1})
    ap.add_argument("--synchronous", choices=("OFF", "NORMAL", "FULL"), help="SQLite only")
    ap.add_argument("--timeout", type=parse_duration, help="run every job under this timeout")
    ap.add_argument("--profile", metavar="FILE", help="also profile one batchq drain (cProfile) into FILE")
    args = parse(ap)
    if args.synchronous and args.backend != "sqlite":
        raise SystemExit("--synchronous is a SQLite setting")
    results: dict[str, list[tuple[float, float, float]]] = {"floor": [], "batchq": []}
    drains = {
        "floor": partial(floor_drain, args.backend, args.synchronous, args.batch),
        "batchq": partial(batchq_drain, args.backend, args.synchronous, args.timeout, args.batch),
    }
    for _ in range(args.repeat):
        for name, make in drains.items():
            reset(args.backend)
            bulk_load(args.backend, args.jobs)
            results[name].append(measure(make(), args.jobs))
    if args.profile:
        profile(drains["batchq"], args.backend, args.jobs, args.profile)
    batch = f", {args.batch} per claim" if args.batch > 1 else ""
    run_label = "`Worker.run()`" + (f" with `timeout={args.timeout:g}`" if args.timeout else "") + batch
    labels = {"floor": f"fused floor loop (`Floor.drain`){batch}", "batchq": run_label}
    rows = [
        [
            labels[name],
            *(med_range([r[i] for r in runs], fmt) for i, fmt in enumerate(["{:,.0f}", "{:.1f}", "{:.1f}"])),
        ]
        for name, runs in results.items()
    ]
    text = table(["system", "jobs/s median (min–max)", "user CPU µs/job", "system CPU µs/job"], rows)
    sync = f", PRAGMA synchronous = {args.synchronous}" if args.synchronous else ""
    text += f"\n\n{args.jobs:,} no-op jobs, one process, {args.repeat} repetitions{sync}."
    text += f"\nCommand: {command_line()}"
    emit(f"CPU per job, in-process: {args.backend}", text, f"cpu-{args.backend}")


if __name__ == "__main__":
    main()
