"""Bounded queues: what a bound costs a send and an enqueue; (PostgreSQL) logged against UNLOGGED
message queues.

    .venv/bin/python bench/bounds.py --backend mysql|sqlite|postgresql --n 1000 --repeat 3

One process, one connection. Each repetition drops and recreates the queues, fills them as the
row says, then times --n calls of each kind in turn (the kinds rotate so each goes first once
in three repetitions):
  send, unbounded                     send() to a queue without a bound (the seed's path)
  send, bounded, room (1k / 10k held) a bound of 10^6 that is never reached, over 1,000 or
                                      10,000 waiting messages: the send locks the queue's row
                                      and counts its messages
  send, full, drop_oldest (1k)        max_length 1,000, full: each send archives the oldest
  send, full, reject (1k)             max_length 1,000, full: each send raises QueueFull
Job queues (Queue.enqueue of a no-op task, the queue bounded with Queue.configure):
  enqueue, unbounded                  (reads the queue's bound once a second)
  enqueue, bounded, room (1k waiting) a bound of 10^6 over 1,000 waiting jobs
  enqueue, full, drop_oldest (1k)     max_length 1,000, full: each enqueue fails the oldest
  enqueue, full, reject (1k)          max_length 1,000, full: each enqueue raises QueueFull
PostgreSQL also (durable=False is an UNLOGGED table there; refused elsewhere):
  send, durable / send, non-durable               send() to an unbounded queue of each kind
  read+delete, durable / read+delete, non-durable read(qty=1) then delete(), over --n messages
Median calls/s over the repetitions, with the range.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from batchq import MessageQueue, Queue, QueueFull

from options import parse, parser
from report import command_line, emit, table
from settings import TASK, url_for

BIG = 10**6


def calls_per_second(call: Callable[[int], object], n: int) -> float:
    start = time.perf_counter()
    for i in range(n):
        call(i)
    return n / (time.perf_counter() - start)


def fresh(mq: MessageQueue, name: str, held: int, **settings: object) -> None:
    """Queue ``name`` created anew with ``settings``, holding ``held`` waiting messages."""
    mq.drop_queue(name)
    mq.create_queue(name, **settings)  # type: ignore[arg-type]
    for start in range(0, held, 1000):
        mq.send_batch(name, [{"i": i} for i in range(start, min(held, start + 1000))])


def reject(mq: MessageQueue, name: str, i: int) -> None:
    try:
        mq.send(name, {"i": i})
    except QueueFull:
        pass


def fresh_jobs(
    q: Queue, name: str, waiting: int, max_length: int | None, overflow: str | None = None
) -> None:
    """Job queue ``name`` emptied, holding ``waiting`` jobs, then bounded as asked."""
    q.configure(name, max_length=None)
    q.purge(name)
    q.enqueue_many(TASK, [{"i": i} for i in range(waiting)], queue=name)
    q.configure(name, max_length=max_length, overflow=overflow)


def enqueue_or_refused(q: Queue, name: str, i: int) -> None:
    try:
        q.enqueue(TASK, {"i": i}, queue=name)
    except QueueFull:
        pass


def read_delete(mq: MessageQueue, name: str) -> None:
    [message] = mq.read(name, vt=60)
    mq.delete(name, message.msg_id)


def kinds(
    mq: MessageQueue, q: Queue, n: int, postgresql: bool
) -> dict[str, tuple[Callable[[], None], Callable[[int], object]]]:
    """Each kind: (set its queue up, one call)."""
    found: dict[str, tuple[Callable[[], None], Callable[[int], object]]] = {
        "send, unbounded": (lambda: fresh(mq, "plain", 0), lambda i: mq.send("plain", {"i": i})),
        "send, bounded, room (1k held)": (
            lambda: fresh(mq, "room1k", 1000, max_length=BIG),
            lambda i: mq.send("room1k", {"i": i}),
        ),
        "send, bounded, room (10k held)": (
            lambda: fresh(mq, "room10k", 10_000, max_length=BIG),
            lambda i: mq.send("room10k", {"i": i}),
        ),
        "send, full, drop_oldest (1k)": (
            lambda: fresh(mq, "ring", 1000, max_length=1000),
            lambda i: mq.send("ring", {"i": i}),
        ),
        "send, full, reject (1k)": (
            lambda: fresh(mq, "strict", 1000, max_length=1000, overflow="reject"),
            lambda i: reject(mq, "strict", i),
        ),
    }
    found.update(
        {
            "enqueue, unbounded": (
                lambda: fresh_jobs(q, "jobs_plain", 0, None),
                lambda i: q.enqueue(TASK, {"i": i}, queue="jobs_plain"),
            ),
            "enqueue, bounded, room (1k waiting)": (
                lambda: fresh_jobs(q, "jobs_room", 1000, BIG),
                lambda i: q.enqueue(TASK, {"i": i}, queue="jobs_room"),
            ),
            "enqueue, full, drop_oldest (1k)": (
                lambda: fresh_jobs(q, "jobs_ring", 1000, 1000),
                lambda i: q.enqueue(TASK, {"i": i}, queue="jobs_ring"),
            ),
            "enqueue, full, reject (1k)": (
                lambda: fresh_jobs(q, "jobs_strict", 1000, 1000, "reject"),
                lambda i: enqueue_or_refused(q, "jobs_strict", i),
            ),
        }
    )
    if postgresql:
        found["send, durable"] = (lambda: fresh(mq, "logged", 0), lambda i: mq.send("logged", {"i": i}))
        found["send, non-durable"] = (
            lambda: fresh(mq, "unlogged", 0, durable=False),
            lambda i: mq.send("unlogged", {"i": i}),
        )
        found["read+delete, durable"] = (lambda: fresh(mq, "logged", n), lambda i: read_delete(mq, "logged"))
        found["read+delete, non-durable"] = (
            lambda: fresh(mq, "unlogged", n, durable=False),
            lambda i: read_delete(mq, "unlogged"),
        )
    return found


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--n", type=int, default=1000, help="calls per kind (default %(default)s)")
    args = parse(ap)
    mq = MessageQueue(url_for(args.backend))
    mq.init_db()
    q = Queue(url_for(args.backend), task_modules=["noop_jobs"])
    calls = kinds(mq, q, args.n, args.backend == "postgresql")
    names = list(calls)
    rates: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(args.repeat):
        shift = rep % 3
        for name in names[shift:] + names[:shift]:
            setup, call = calls[name]
            setup()
            rates[name].append(calls_per_second(call, args.n))
    for name in ("plain", "room1k", "room10k", "ring", "strict", "logged", "unlogged"):
        mq.drop_queue(name)
    for name in ("jobs_plain", "jobs_room", "jobs_ring", "jobs_strict"):
        fresh_jobs(q, name, 0, None)
    mq.close()
    q.close()
    bases = {
        "send": statistics.median(rates["send, unbounded"]),
        "enqueue": statistics.median(rates["enqueue, unbounded"]),
    }
    rows = [
        [
            name,
            f"{statistics.median(r):,.0f}",
            f"{min(r):,.0f}-{max(r):,.0f}",
            f"{1000 / statistics.median(r):.2f}",
            f"{statistics.median(r) / bases[name.split(',')[0]]:.2f}" if name.split(",")[0] in bases else "",
        ]
        for name, r in rates.items()
    ]
    emit(
        f"bounded queues, {args.backend}, {args.n} calls x {args.repeat}",
        table(["call", "calls/s (median)", "range", "ms/call", "vs unbounded"], rows)
        + f"\n\n{command_line()}",
        f"bounds_{args.backend}",
    )


if __name__ == "__main__":
    main()
