"""What the operator's views of message queues cost (`batchq mq stats`, `batchq stats`,
`batchq metrics`, the dashboard's Message queues pages) as a queue grows.

    .venv/bin/python bench/mq_views.py --backend sqlite|mysql|postgresql --messages 100000 --rounds 20

Fills queue bench_views with --messages small messages (send_batch of 1,000; a tenth of them read,
so some are held) plus nine small queues, then times, each --rounds times with
time.perf_counter: queue_figures of every queue (what stats and metrics read), of one queue,
a page of 50 messages from the middle of the big queue (keyset: after an id), and one peek.
Prints the median and the p10-p90 range in ms. These views are not on the send or read path.
Uses BENCH_<BACKEND>_URL (bench/settings.py).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from batchq import MessageQueue
from batchq.mq.overview import message_page, peek, queue_figures

from report import command_line, table
from settings import url_for
from stats import median, percentile

BIG = "bench_views"
SMALL = [f"bench_views_{n}" for n in range(9)]


def timed(action: Callable[[], object], rounds: int) -> list[float]:
    runs = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        runs.append((time.perf_counter() - start) * 1000)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", required=True, choices=["sqlite", "mysql", "postgresql"])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    mq = MessageQueue(url_for(args.backend))
    mq.init_db()
    for name in (BIG, *SMALL):
        mq.drop_queue(name)
        mq.create_queue(name)
        mq.send_batch(name, [{"n": n} for n in range(10)])
    ids: list[int] = []
    for start in range(0, args.messages, 1000):
        ids += mq.send_batch(
            BIG, [{"n": n, "to": f"user{n}@example.com"} for n in range(start, start + 1000)]
        )
    for _ in range(args.messages // 10 // 1000):
        mq.read(BIG, vt=3600, qty=1000)
    backend = mq.backend
    middle = ids[len(ids) // 2]
    cases = {
        "queue_figures, every queue": lambda: queue_figures(backend),
        "queue_figures, one queue": lambda: queue_figures(backend, BIG),
        "a page of 50 from the middle": lambda: message_page(backend, BIG, after=middle),
        "peek one message": lambda: peek(backend, BIG, middle),
    }
    rows = []
    for label, action in cases.items():
        ms = timed(action, args.rounds)
        rows.append([label, f"{median(ms):.2f}", f"{percentile(ms, 10):.2f}-{percentile(ms, 90):.2f}"])
    print(f"{args.backend}: {args.messages:,} messages in one queue, 9 small queues, {args.rounds} rounds")
    print(table(["view", "ms (median)", "p10-p90"], rows))
    print(command_line())
    for name in (BIG, *SMALL):
        mq.drop_queue(name)


if __name__ == "__main__":
    main()
