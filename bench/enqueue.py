"""Enqueue from one process: floor vs `Queue(url).enqueue()` / `enqueue_many()` vs peers.

    .venv/bin/python bench/enqueue.py --backend mysql|sqlite|postgresql --n 2000 --batches 100 --repeat 3

single: --n calls, each timed (time.perf_counter around the call) -> jobs/s, p50, p99.
  floor:  cursor.execute(batchq's `enqueue` statement, params) in autocommit (one INSERT
          = one transaction), payload json-encoded in the loop as batchq does.
  batchq: Queue(url).enqueue("noop_jobs:noop", {"i": i}).
  huey:   calling the @huey.task noop({"i": i}) (one INSERT in autocommit).
  PostgreSQL peers (bench/peers.py, sync APIs, each in its own database):
          procrastinate `noop.defer(payload={"i": i})`; pgqueuer
          `SyncQueries.enqueue("noop", json bytes)`.
many: --batches of 100 jobs.
  floor:  batchq's own way per backend. MySQL/MariaDB and SQLite: ONE 100-row INSERT
          (batchq's enqueue VALUES row repeated 100 times), autocommit. PostgreSQL: BEGIN;
          executemany(enqueue, 100 rows) (psycopg sends them as one pipeline); COMMIT.
  PostgreSQL reference row: the one 100-row INSERT too, although batchq does not send it
          there, to show what that path would give.
  batchq: Queue(url).enqueue_many("noop_jobs:noop", [100 payloads]).
  PostgreSQL peers, with their batch APIs: procrastinate `noop.batch_defer(*100 kwargs)`;
          pgqueuer `SyncQueries.enqueue([...], [...], [...])` (lists of 100: one statement).
Every system opens its connection with one untimed enqueue before the timed loop.
On PostgreSQL every INSERT into batchq_job fires batchq's NOTIFY trigger (its default
schema: floor and batchq alike); procrastinate and pgqueuer NOTIFY per job too.
"""

from __future__ import annotations

import json
import os
import sys
import time

from floors import floor_for
from loads import reset
from machine import server_info
from options import parse, parser
from peers import ENQUEUE_PEERS
from report import command_line, emit, table
from settings import BENCH_DIR, TASK, bench_env, url_for
from stats import med_range, median, percentile, ratio

HUEY_KINDS = {"mysql": ["mysql-sql"], "sqlite": ["sqlite", "sqlite-sql"], "postgresql": ["postgresql-sql"]}
PEER_KINDS = {"postgresql": list(ENQUEUE_PEERS)}
PEER_LABEL = {
    "procrastinate 1": "procrastinate: `noop.defer()`",
    "pgqueuer 1": "pgqueuer: `SyncQueries.enqueue()`",
    "procrastinate many": "procrastinate: `noop.batch_defer()` of {s}",
    "pgqueuer many": "pgqueuer: `SyncQueries.enqueue()` with lists of {s}",
}
HUEY_LABEL = {
    "mysql-sql": "huey SqlHuey (peewee, MariaDB): task()",
    "postgresql-sql": "huey SqlHuey (peewee, PostgreSQL): task()",
    "sqlite-sql": "huey SqlHuey (peewee, SQLite WAL): task()",
    "sqlite": "huey SqliteHuey (WAL): task()",
}


def timed_loop(call, n: int) -> tuple[float, list[float]]:
    lat = []
    pc = time.perf_counter
    t0 = pc()
    for i in range(n):
        s = pc()
        call(i)
        lat.append(pc() - s)
    return n / (pc() - t0), lat


def floor_single(backend: str, n: int):
    f = floor_for(backend)
    row = f.row

    def call(i: int) -> None:
        r = row(0)
        r["payload"] = json.dumps({"i": i}, separators=(",", ":")).encode()
        f.enqueue(r)

    call(-1)
    out = timed_loop(call, n)
    f.close()
    return out


def batchq_single(backend: str, n: int):
    from batchq import Queue

    q = Queue(url_for(backend), task_modules="noop_jobs")
    q.enqueue(TASK, {"i": -1})
    out = timed_loop(lambda i: q.enqueue(TASK, {"i": i}), n)
    q.close()
    return out


def floor_many(backend: str, batches: int, size: int, method: str = "enqueue_multi"):
    """Batches of ``size`` jobs through a floor method: ``enqueue_multi`` (batchq's own path on
    that backend) or, on PostgreSQL, ``enqueue_multi_row`` (one multi-row INSERT, a reference)."""
    f = floor_for(backend)
    row, send = f.row, getattr(f, method)

    def call(b: int) -> None:
        rows = []
        for i in range(size):
            r = row(0)
            r["payload"] = json.dumps({"i": b * size + i}, separators=(",", ":")).encode()
            rows.append(r)
        send(rows)

    call(-1)
    rate, lat = timed_loop(call, batches)
    f.close()
    return rate * size, lat


def peer_single(name: str, n: int):
    peer = ENQUEUE_PEERS[name]()
    peer.setup()
    peer.reset()
    with peer.producer() as (one, _):
        one(-1)
        return timed_loop(one, n)


def peer_many(name: str, batches: int, size: int):
    peer = ENQUEUE_PEERS[name]()
    peer.setup()
    peer.reset()
    with peer.producer() as (_, many):
        many(range(-size, 0))
        rate, lat = timed_loop(lambda b: many(range(b * size, (b + 1) * size)), batches)
    return rate * size, lat


def batchq_many(backend: str, batches: int, size: int):
    from batchq import Queue

    q = Queue(url_for(backend), task_modules="noop_jobs")
    q.enqueue_many(TASK, [{"i": i} for i in range(size)])
    rate, lat = timed_loop(
        lambda b: q.enqueue_many(TASK, [{"i": b * size + i} for i in range(size)]), batches
    )
    q.close()
    return rate * size, lat


def huey_single(kind: str, n: int):
    os.environ.update(bench_env("sqlite", BENCH_HUEY=kind))
    sys.path.insert(0, str(BENCH_DIR))
    import importlib

    import huey_app

    app = importlib.reload(huey_app)
    app.flush()
    app.noop({"i": -1})
    out = timed_loop(lambda i: app.noop({"i": i}), n)
    app.flush()
    app.huey.storage.close()
    return out


def main() -> None:
    ap = parser(__doc__, peers=True, quick={"n": 300, "batches": 20, "repeat": 1})
    ap.add_argument("--n", type=int, default=2000, help="single enqueues per repetition")
    ap.add_argument("--batches", type=int, default=100, help="batches of --size per repetition")
    ap.add_argument("--size", type=int, default=100)
    args = parse(ap)
    kinds = [] if args.no_peers else HUEY_KINDS.get(args.backend, [])
    peers = [] if args.no_peers else PEER_KINDS.get(args.backend, [])
    multi_row = args.backend == "postgresql"
    res: dict[str, list[tuple[float, list[float]]]] = {}
    for rep in range(args.repeat):
        plan = [
            ("floor 1", lambda: floor_single(args.backend, args.n)),
            ("batchq 1", lambda: batchq_single(args.backend, args.n)),
            *[(f"huey {k}", lambda k=k: huey_single(k, args.n)) for k in kinds],
            *[(f"{p} 1", lambda p=p: peer_single(p, args.n)) for p in peers],
            ("floor many", lambda: floor_many(args.backend, args.batches, args.size)),
            *(
                [
                    (
                        "floor multi-row",
                        lambda: floor_many(args.backend, args.batches, args.size, "enqueue_multi_row"),
                    )
                ]
                if multi_row
                else []
            ),
            ("batchq many", lambda: batchq_many(args.backend, args.batches, args.size)),
            *[(f"{p} many", lambda p=p: peer_many(p, args.batches, args.size)) for p in peers],
        ]
        for name, fn in plan:
            reset(args.backend)
            rate, lat = fn()
            res.setdefault(name, []).append((rate, lat))
            print(f"# rep {rep + 1} {name}: {rate:,.0f} jobs/s", file=sys.stderr, flush=True)

    def row(name: str, label: str, floor_name: str) -> list[str]:
        rates = [r for r, _ in res[name]]
        lats = [x for _, lat in res[name] for x in lat]
        fl = median([r for r, _ in res[floor_name]])
        return [
            label,
            med_range(rates),
            ratio(median(rates), fl),
            f"{percentile(lats, 50) * 1e3:.2f}",
            f"{percentile(lats, 99) * 1e3:.2f}",
        ]

    s = args.size
    if multi_row:
        floor_many_label = f"raw-SQL floor: BEGIN; executemany of {s} INSERTs (one pipeline); COMMIT"
    else:
        floor_many_label = f"raw-SQL floor: one {s}-row INSERT (autocommit)"
    rows = [
        row("floor 1", "raw-SQL floor: one INSERT (autocommit)", "floor 1"),
        row("batchq 1", "`Queue.enqueue()`", "floor 1"),
        *[row(f"huey {k}", HUEY_LABEL[k], "floor 1") for k in kinds],
        *[row(f"{p} 1", PEER_LABEL[f"{p} 1"], "floor 1") for p in peers],
        row("floor many", floor_many_label, "floor many"),
        *(
            [
                row(
                    "floor multi-row",
                    f"reference, not batchq's path here: one {s}-row INSERT (autocommit)",
                    "floor many",
                )
            ]
            if multi_row
            else []
        ),
        row("batchq many", f"`Queue.enqueue_many()` of {s}", "floor many"),
        *[row(f"{p} many", PEER_LABEL[f"{p} many"].format(s=s), "floor many") for p in peers],
    ]
    info = server_info(args.backend)
    text = table(
        ["system", "jobs/s median (min–max)", "of floor", "p50 ms per call", "p99 ms per call"], rows
    )
    text += (
        f"\n\n{args.n:,} single calls and {args.batches} x {s}-job calls per repetition, {args.repeat} "
        "repetitions, one process; latency percentiles over all calls of all repetitions "
        f"(a call of the 'many' rows writes {s} jobs); "
        + ", ".join(f"{k}={v}" for k, v in info.items())
        + f".\nCommand: {command_line()}"
    )
    emit(f"enqueue: {args.backend}", text, f"enqueue-{args.backend}")


if __name__ == "__main__":
    main()
