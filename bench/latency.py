"""Enqueue-to-start latency for a worker that is already waiting on an empty queue.

    .venv/bin/python bench/latency.py --backend mysql --jobs 15 --poll 1,0.1 --repeat 3
    (--backend mysql|sqlite|postgresql)

One `batchq run --wait 60 --poll-interval P --max-jobs N` is started and given a second to
settle on the empty queue; then N `noop_jobs:stamp` jobs are enqueued with
Queue(url).enqueue(), at random gaps of 0.1-0.4 s (so enqueues do not lock step with the
poll), each carrying time.time() at enqueue; the job appends its own start time.
latency = start - enqueue (same host, same clock).
MySQL/MariaDB and SQLite: a waiting worker sleeps poll-interval between empty claims, so
the expected mean is about P/2 plus one claim.
PostgreSQL: a waiting worker LISTENs on batchq_jobs and the enqueue's INSERT trigger sends
a NOTIFY at commit, which wakes it at once: the expected latency is one notification plus
one claim, whatever P (P only bounds a wait that no notification ends).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time

from loads import reset
from options import floats, parse, parser
from report import command_line, emit, table
from settings import BATCHQ, REPO_DIR, bench_env, url_for
from stats import med_range, percentile


def one_run(backend: str, jobs: int, poll: float) -> list[float]:
    from batchq import Queue

    reset(backend)
    fd, stamp_file = tempfile.mkstemp(prefix="batchq-latency-", suffix=".txt")
    os.close(fd)
    env = bench_env(backend, BENCH_STAMP_FILE=stamp_file)
    worker = subprocess.Popen(
        [BATCHQ, "run", "--wait", "60", "--poll-interval", str(poll), "--max-jobs", str(jobs)],
        env=env,
        cwd=REPO_DIR,
    )
    q = Queue(url_for(backend), task_modules="noop_jobs")
    time.sleep(1.0)
    for _ in range(jobs):
        q.enqueue("noop_jobs:stamp", {"t": time.time()})
        time.sleep(random.uniform(0.1, 0.4))
    try:
        worker.wait(timeout=60)
    finally:
        if worker.poll() is None:
            worker.kill()
    q.close()
    with open(stamp_file) as fh:
        pairs = [tuple(map(float, line.split())) for line in fh if line.strip()]
    os.unlink(stamp_file)
    if len(pairs) != jobs:
        raise RuntimeError(f"expected {jobs} stamps, got {len(pairs)}")
    return [start - enq for enq, start in pairs]


def main() -> None:
    ap = parser(__doc__, jobs=15, jobs_help="jobs per run", quick={"jobs": 8, "repeat": 1})
    ap.add_argument(
        "--poll", type=floats, default="1,0.1", help="poll intervals, seconds (1 is batchq's default)"
    )
    args = parse(ap)
    polls = args.poll
    res: dict[float, list[list[float]]] = {p: [] for p in polls}
    for rep in range(args.repeat):
        for poll in polls:
            lat = one_run(args.backend, args.jobs, poll)
            res[poll].append(lat)
            print(
                f"# rep {rep + 1} poll {poll}: p50 {percentile(lat, 50) * 1e3:.1f} ms "
                f"max {max(lat) * 1e3:.1f} ms",
                file=sys.stderr,
                flush=True,
            )
    rows = []
    wake = " (woken by LISTEN/NOTIFY)" if args.backend == "postgresql" else ""
    for poll in polls:
        runs = res[poll]
        rows.append(
            [
                f"`batchq run --wait 60 --poll-interval {poll:g}`{wake}",
                med_range([percentile(r, 50) * 1e3 for r in runs], "{:.1f}"),
                med_range([max(r) * 1e3 for r in runs], "{:.1f}"),
                f"{sum(sum(r) for r in runs) / sum(len(r) for r in runs) * 1e3:.1f}",
            ]
        )
    text = table(
        [
            "waiting worker",
            "p50 ms, median of runs (min–max)",
            "max ms, median of runs (min–max)",
            "mean ms, all jobs",
        ],
        rows,
    )
    text += (
        f"\n\n{args.jobs} jobs per run, {args.repeat} runs per setting; enqueue with Queue.enqueue(), "
        f"start stamped by the job itself."
        + (
            " On PostgreSQL the waiting worker is woken by the NOTIFY of batchq's enqueue trigger; "
            "the poll interval only bounds a wait that no notification ends."
            if args.backend == "postgresql"
            else " The waiting worker polls: expect about half the poll interval plus one claim."
        )
        + f"\nCommand: {command_line()}"
    )
    emit(f"latency: enqueue-to-start, {args.backend}", text, f"latency-{args.backend}")


if __name__ == "__main__":
    main()
