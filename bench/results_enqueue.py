"""enqueue() per call with results off and on (keep_result=True), and off in another checkout.

    .venv/bin/python bench/results_enqueue.py --backend mysql|postgresql|sqlite --n 1000 \
        --repeat 6 [--checkout PATH]

Each sample is a fresh child process that makes 50 untimed calls, then times --n calls of
`Queue.enqueue("noop_jobs:noop", {"i": i})`; the modes run in rotating order, one sample each per
round. `--checkout PATH` (a `git archive` of an older commit, with `batchq/sql` linked to its
`sql/`, as bench/history_inprocess.py takes) adds a "before" row: the same calls, results off, by
that checkout's code (PYTHONPATH), on the same database. Prints the median and range, µs per call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from settings import BENCH_DIR, url_for


def _child(url: str, n: int, mode: str) -> None:
    from batchq import Queue

    queue = Queue(url, task_modules=["noop_jobs"])
    options = {"keep_result": True} if mode == "on" else {}
    for i in range(50):
        queue.enqueue("noop_jobs:noop", {"i": i}, **options)
    start = time.perf_counter()
    for i in range(n):
        queue.enqueue("noop_jobs:noop", {"i": i}, **options)
    print((time.perf_counter() - start) / n * 1e6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("mysql", "sqlite", "postgresql"), required=True)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=6)
    parser.add_argument("--checkout", help="an older checkout, timed with results off as 'before'")
    parser.add_argument("--child", nargs=2, metavar=("URL", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.n, args.child[1])
        return
    url = url_for(args.backend)
    from batchq import Queue

    Queue(url).init_db()
    modes = ["off", "on"] + (["before"] if args.checkout else [])
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    for round_ in range(args.repeat):
        for mode in modes[round_ % len(modes) :] + modes[: round_ % len(modes)]:
            env = dict(os.environ)
            paths = [args.checkout] if mode == "before" else []
            env["PYTHONPATH"] = os.pathsep.join([*paths, str(BENCH_DIR)])
            command = [sys.executable, __file__, "--backend", args.backend, "--n", str(args.n)]
            out = subprocess.run([*command, "--child", url, mode], env=env, capture_output=True, text=True)
            if out.returncode:
                raise SystemExit(out.stderr)
            samples[mode].append(float(out.stdout))
    print(f"| {args.backend}, {args.n:,} enqueue() per sample, {args.repeat} rounds | µs per call |")
    print("|---|---|")
    for mode in modes:
        values = samples[mode]
        print(f"| {mode} | {statistics.median(values):.1f} ({min(values):.1f}–{max(values):.1f}) |")


if __name__ == "__main__":
    main()
