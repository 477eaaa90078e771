"""What finishing a job in its own transaction costs (@task(transactional=True)).

    .venv/bin/python bench/finish_tx.py --url URL [--jobs 2000] [--repeat 3] [--batch 1]

Drains --jobs pre-loaded jobs in-process (Worker.run(), one worker). "noop" jobs write nothing
(the claim and the finish alone); the others insert one row into bench_credit: "plain" writes
it on a connection of the task's own (autocommit) and the job ends with the worker's next
claim, as every job does; "transactional" writes it on the job's transaction
(batchq.job_transaction), and the job ends in that transaction, a commit of its own.
Modes alternate, reversed every other round; the table gives jobs/s (median, min-max) and the
ratio of the medians. The URL's database gets the batchq tables (init-db) and bench_credit; its
jobs and bench_credit are emptied before every drain.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from batchq import Queue  # noqa: E402
from batchq.backends.schema import migrate  # noqa: E402
from batchq.runtime.worker import RunOptions, Worker  # noqa: E402

MODES = ("noop", "plain", "transactional")


def prepare(queue: Queue) -> None:
    backend = queue.backend
    migrate(backend)
    with backend.errors():
        cur = backend.conn.cursor()
        cur.execute("CREATE TABLE IF NOT EXISTS bench_credit (n BIGINT NOT NULL)")
        cur.close()


def empty(queue: Queue) -> None:
    backend = queue.backend
    with backend.errors():
        cur = backend.conn.cursor()
        cur.execute("DELETE FROM bench_credit")
        cur.execute("DELETE FROM batchq_job")
        cur.close()


def drain(queue: Queue, mode: str, jobs: int, batch: int) -> float:
    """jobs/s of one drain of ``jobs`` jobs of ``mode``."""
    empty(queue)
    for start in range(0, jobs, 1000):
        queue.enqueue_many(
            f"finish_tx_tasks:{mode}", [{"n": n} for n in range(start, min(start + 1000, jobs))]
        )
    began = time.perf_counter()
    summary = Worker(queue, RunOptions(batch_size=batch)).run()
    elapsed = time.perf_counter() - began
    assert summary.succeeded == jobs, summary
    return jobs / elapsed


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--url", required=True)
    args.add_argument("--jobs", type=int, default=2000)
    args.add_argument("--repeat", type=int, default=3)
    args.add_argument("--batch", type=int, default=1)
    opts = args.parse_args()
    os.environ["BATCHQ_URL"] = opts.url
    queue = Queue(opts.url, task_modules=["finish_tx_tasks"])
    prepare(queue)
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    for round_ in range(opts.repeat):
        for mode in MODES if round_ % 2 == 0 else reversed(MODES):
            rates[mode].append(drain(queue, mode, opts.jobs, opts.batch))
    queue.close()
    dialect = opts.url.split(":", 1)[0]
    print(
        f"| {dialect}, {opts.jobs:,} jobs, --batch {opts.batch}: jobs/s, median (min-max) "
        "| noop | plain | transactional | transactional / plain |"
    )
    print("|---|---|---|---|---|")
    cells = [f"{statistics.median(r):,.0f} ({min(r):,.0f}-{max(r):,.0f})" for r in rates.values()]
    ratio = statistics.median(rates["transactional"]) / statistics.median(rates["plain"])
    print(f"| one worker, in-process | {' | '.join(cells)} | {ratio:.2f}x |")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\n{opts.repeat} rounds; load average (1, 5, 15 min) at the end: {load}")


if __name__ == "__main__":
    main()
