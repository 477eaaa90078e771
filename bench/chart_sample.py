"""The cost of the dashboard charts' sample (batchq.ops.charts.sample, run by `batchq tick`) and of
reading the charts page's data (batchq.ops.charts.read), on a backlog and a busy history (issue 28).

    .venv/bin/python bench/chart_sample.py --url URL --jobs 100000 --queues 20 --kept-per-minute 1000

Loads --jobs ready jobs spread over --queues queues, and --kept-per-minute finished jobs per
minute into history over the last 61 minutes (the first sample counts a full hour back), then
times: the first sample (an hour of counts); a sample a minute later (the usual case); a sample
in a minute already sampled (what every other host's tick pays); and read() for 1h, 24h and 7d.
The tables are emptied first: give it a database of its own.
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime, timedelta, timezone

from batchq import Queue
from batchq.ops import charts

from settings import TASK

TABLES = ("batchq_job", "batchq_history", "batchq_chart_minute", "batchq_queue")


def empty(queue: Queue) -> None:
    backend = queue.backend
    with backend.errors():
        cur = backend.conn.cursor()
        for table in TABLES:
            cur.execute(f"DELETE FROM {table}")
        cur.close()
        if backend.dialect != "sqlite":
            backend.conn.commit()


def load_history(queue: Queue, per_minute: int, queues: int) -> None:
    backend = queue.backend
    mark = "?" if backend.dialect == "sqlite" else "%s"
    statement = (
        "INSERT INTO batchq_history (id, queue, task, serializer, outcome, attempts, enqueued_at, "
        "finished_at) "
        f"VALUES ({', '.join([mark] * 8)})"
    )
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    rows = []
    for minute in range(61):
        for n in range(per_minute):
            at = now - timedelta(minutes=minute, seconds=n * 60 / per_minute)
            stamp: object = at.strftime("%Y-%m-%d %H:%M:%S.%f") if backend.dialect == "sqlite" else at
            outcome = "failed" if n % 50 == 0 else "succeeded"
            rows.append((10**9 + len(rows), f"q{n % queues}", "bench:noop", "json", outcome, 1, stamp, stamp))
    with backend.errors():
        cur = backend.conn.cursor()
        cur.executemany(statement, rows)
        cur.close()
        backend.conn.commit()


def timed(label: str, action: object) -> None:
    start = time.perf_counter()
    result = action()  # type: ignore[operator]
    print(f"| {label} | {(time.perf_counter() - start) * 1000:.1f} ms | {result} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--queues", type=int, default=20)
    parser.add_argument("--kept-per-minute", type=int, default=1000)
    args = parser.parse_args()
    queue = Queue(args.url, task_modules=["noop_jobs"])
    queue.init_db()
    empty(queue)
    per_queue = args.jobs // args.queues
    for n in range(args.queues):
        for start in range(0, per_queue, 10_000):
            queue.enqueue_many(TASK, [None] * min(10_000, per_queue - start), queue=f"q{n}")
    load_history(queue, args.kept_per_minute, args.queues)
    backend = queue.backend
    now = int(backend.fetchone("chart_now")["now"])  # type: ignore[index]
    print(
        f"{backend.dialect}: {args.jobs} jobs in {args.queues} queues, {args.kept_per_minute} kept a minute"
    )
    print("| step | time | result |\n|---|---|---|")
    timed("first sample (an hour of counts)", lambda: charts.sample(backend, at=now))
    timed("sample a minute later", lambda: charts.sample(backend, at=now + 1))
    timed("sample again in that minute", lambda: charts.sample(backend, at=now + 1))
    for name in charts.RANGES:
        timed(f"read {name}", lambda name=name: len(charts.read(backend, name, at=now + 1).series))
    queue.close()


if __name__ == "__main__":
    main()
