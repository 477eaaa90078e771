"""What a FIFO read by group costs: MessageQueue.read_grouped_head against read, by queue size.

    .venv/bin/python bench/mq_grouped_read.py --backend sqlite|mysql|postgresql --messages 10000

One process, one connection: a queue of --messages messages spread over --groups groups (the
x-pgmq-group header), then --rounds rounds that each time one read(qty=10) and one
read_grouped_head(qty=10) (vt 1 h) with time.perf_counter, alternating, and make the messages
visible again (set_vt 0, untimed). Prints each read's median and p10-p90 in ms. read_grouped_head
finds each group's head with a GROUP BY over the queue's messages (as PGMQ's does), so its cost
grows with the queue; read's does not. Uses BENCH_<BACKEND>_URL (bench/settings.py).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from batchq import Message, MessageQueue

from settings import url_for

QUEUE = "bench_grouped"


def fill(mq: MessageQueue, messages: int, groups: int) -> None:
    mq.drop_queue(QUEUE)
    mq.create_queue(QUEUE)
    for start in range(0, messages, 1000):
        n = range(start, min(messages, start + 1000))
        mq.send_batch(QUEUE, [{"i": i} for i in n], headers=[{"x-pgmq-group": f"g{i % groups}"} for i in n])


def timed(mq: MessageQueue, read: Callable[[], list[Message]]) -> float:
    start = time.perf_counter()
    got = read()
    took = (time.perf_counter() - start) * 1000
    for message in got:
        mq.set_vt(QUEUE, message.msg_id, 0)
    return took


def summary(name: str, times: list[float]) -> str:
    deciles = statistics.quantiles(times, n=10)
    median = statistics.median(times)
    return f"{name:<28} median {median:8.1f} ms   p10-p90 {deciles[0]:.1f}-{deciles[-1]:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", required=True, choices=["sqlite", "mysql", "postgresql"])
    parser.add_argument("--messages", type=int, default=10000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    mq = MessageQueue(url_for(args.backend))
    mq.init_db()
    fill(mq, args.messages, args.groups)
    plain: list[float] = []
    grouped: list[float] = []
    for _ in range(args.rounds):
        plain.append(timed(mq, lambda: mq.read(QUEUE, vt=3600, qty=10)))
        grouped.append(timed(mq, lambda: mq.read_grouped_head(QUEUE, vt=3600, qty=10)))
    print(f"{args.backend}, {args.messages} messages in {args.groups} groups, {args.rounds} rounds")
    print(summary("read(qty=10)", plain))
    print(summary("read_grouped_head(qty=10)", grouped))
    mq.drop_queue(QUEUE)
    mq.close()


if __name__ == "__main__":
    main()
