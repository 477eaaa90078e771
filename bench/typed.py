"""Typed vs untyped message queues: the cost of checking a type on `send_batch`.

    .venv/bin/python bench/typed.py --backend sqlite|mysql|postgresql --rounds 200

Each round sends one batch of 100 small messages ({"id", "email", "qty"}) to an untyped queue
and one to a queue typed by a JSON Schema of those three fields (required, typed, qty >= 1, no
other keys), in alternating order, each timed with time.perf_counter around send_batch; both
queues are purged (untimed) every 20 rounds so their tables stay small. The sender has sent to
both queues once before timing (it has learnt the type). Prints the median and the p10-p90 range
per queue, and typed/untyped of the medians. Uses BENCH_<BACKEND>_URL (bench/settings.py).
"""

from __future__ import annotations

import argparse
import time

from batchq import MessageQueue

from report import command_line, table
from settings import url_for
from stats import median, percentile

SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "email": {"type": "string"},
        "qty": {"type": "integer", "minimum": 1},
    },
    "required": ["id", "email", "qty"],
    "additionalProperties": False,
}
BATCH = 100


def check_alone(msgs: list[dict[str, object]]) -> float:
    """Median seconds of batchq's own check of a batch (no database): what typing adds."""
    from batchq.mq.checks import _check_type, _json_text
    from batchq.policy.typed import QueueType, schema_text

    known = QueueType(schema_text(SCHEMA))
    rows = [{"message": _json_text(m, "message")} for m in msgs]
    runs = []
    for _ in range(200):
        start = time.perf_counter()
        _check_type(known, "bench_typed", rows)
        runs.append(time.perf_counter() - start)
    return median(runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", required=True, choices=["sqlite", "mysql", "postgresql"])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    mq = MessageQueue(url_for(args.backend))
    mq.init_db()
    for name in ("bench_untyped", "bench_typed"):
        mq.drop_queue(name)
    mq.create_queue("bench_untyped")
    mq.create_queue("bench_typed", schema=SCHEMA)
    msgs = [{"id": i, "email": f"user{i}@example.com", "qty": 1 + i % 5} for i in range(BATCH)]
    times: dict[str, list[float]] = {"bench_untyped": [], "bench_typed": []}
    for name in times:
        mq.send_batch(name, msgs)
    for r in range(args.rounds):
        order = list(times) if r % 2 else list(reversed(times))
        for name in order:
            start = time.perf_counter()
            mq.send_batch(name, msgs)
            times[name].append(time.perf_counter() - start)
        if r % 20 == 19:
            for name in times:
                mq.purge_queue(name)
    rows = []
    for name, label in (("bench_untyped", "untyped"), ("bench_typed", "typed (JSON Schema)")):
        ms = [t * 1000 for t in times[name]]
        rows.append([label, f"{median(ms):.2f}", f"{percentile(ms, 10):.2f}-{percentile(ms, 90):.2f}"])
    ratio = median(times["bench_typed"]) / median(times["bench_untyped"])
    rows.append(["typed / untyped", f"{ratio:.2f}x", ""])
    print(f"{args.backend}: send_batch of {BATCH} small messages, {args.rounds} rounds")
    print(table(["queue", "ms per batch (median)", "p10-p90"], rows))
    print(f"type check alone (json.loads + validate, 100 messages): {check_alone(msgs) * 1e3:.3f} ms")
    print(command_line())
    for name in times:
        mq.drop_queue(name)


if __name__ == "__main__":
    main()
