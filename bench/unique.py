"""Unique jobs: what a unique key costs an enqueue, one process.

    .venv/bin/python bench/unique.py --backend mysql|sqlite|postgresql --n 2000 --repeat 3

Each repetition empties the table, then times --n calls of each, interleaved in turn:
  plain:     Queue(url).enqueue(TASK, {"i": i})                      (no key)
  new key:   enqueue(TASK, {"i": i}, unique_key=f"bench:{rep}:{i}")  (writes a job)
  held key:  enqueue(TASK, {"i": i}, unique_key="bench:held")        (writes nothing: one
             INSERT that skips, then the lookup of the holder)
Median calls/s over the repetitions; each kind goes first in one repetition of three.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from batchq import Queue

from loads import reset
from options import parse, parser
from report import command_line, emit, table
from settings import TASK, url_for

KINDS = ("plain", "new key", "held key")


def calls_per_second(call: Callable[[int], object], n: int) -> float:
    start = time.perf_counter()
    for i in range(n):
        call(i)
    return n / (time.perf_counter() - start)


def enqueuers(q: Queue, rep: int) -> dict[str, Callable[[int], object]]:
    return {
        "plain": lambda i: q.enqueue(TASK, {"i": i}),
        "new key": lambda i: q.enqueue(TASK, {"i": i}, unique_key=f"bench:{rep}:{i}"),
        "held key": lambda i: q.enqueue(TASK, {"i": i}, unique_key="bench:held"),
    }


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--n", type=int, default=2000, help="calls per kind (default %(default)s)")
    args = parse(ap)
    rates: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for rep in range(args.repeat):
        reset(args.backend)
        q = Queue(url_for(args.backend), task_modules=["noop_jobs"])
        q.enqueue(TASK, unique_key="bench:held")  # connects, and holds the key from now on
        calls = enqueuers(q, rep)
        for kind in KINDS[rep % 3 :] + KINDS[: rep % 3]:  # each kind goes first once in three
            rates[kind].append(calls_per_second(calls[kind], args.n))
        q.close()
    rows = [
        [kind, f"{statistics.median(r):,.0f}", f"{min(r):,.0f}-{max(r):,.0f}"] for kind, r in rates.items()
    ]
    emit(
        f"unique keys, {args.backend}, {args.n} calls x {args.repeat}",
        table(["enqueue", "calls/s (median)", "range"], rows) + f"\n\n{command_line()}",
        f"unique_{args.backend}",
    )


if __name__ == "__main__":
    main()
