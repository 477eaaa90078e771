"""Would a reads counter be cheap? The cost a per-queue reads total would add to `read`, measured
before deciding (docs/operations-mq.md, "Why no reads total"); batchq ships no such counter.

    .venv/bin/python bench/mq_read_counter.py --backend sqlite|mysql|postgresql --rounds 2000

One process, one connection, a queue of --rounds messages; each round reads one message
(qty=1, vt 1 h) in one of two ways, alternating, timed with time.perf_counter:
- as batchq reads today (`MessageQueue.read`);
- the same read plus an UPDATE of one of 16 shard rows of a scratch counter table
  (bench_mq_reads), in the read's transaction: on SQLite and MySQL one more statement in the
  transaction the read already has; on PostgreSQL, where a read is one statement in autocommit,
  both ways are timed: a transaction around the read and the UPDATE, and one statement (the
  read's SQL with the UPDATE as a data-modifying CTE).
Prints the median and p10-p90 in ms, and each way's ratio to today's read. One reader, no
contention: readers holding a shard's row lock in an application's transaction (`conn=`) would
also wait for each other, which this does not show. Uses BENCH_<BACKEND>_URL (bench/settings.py).
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from batchq import MessageQueue
from batchq.backends.sqlfiles import queries

from report import command_line, table
from settings import url_for
from stats import median, percentile

QUEUE = "bench_read_counter"
SHARDS = 16


def scratch_table(mq: MessageQueue) -> None:
    backend = mq.backend
    cur = backend.conn.cursor()
    cur.execute("DROP TABLE IF EXISTS bench_mq_reads")
    cur.execute(
        "CREATE TABLE bench_mq_reads (queue VARCHAR(64) NOT NULL, shard INT NOT NULL, "
        "n BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (queue, shard))"
    )
    mark = "?" if backend.dialect == "sqlite" else "%s"
    for shard in range(SHARDS):
        cur.execute(
            f"INSERT INTO bench_mq_reads (queue, shard, n) VALUES ({mark}, {mark}, 0)", (QUEUE, shard)
        )
    cur.close()
    if getattr(backend.conn, "in_transaction", False):  # sqlite3 outside autocommit
        backend.conn.commit()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", required=True, choices=["sqlite", "mysql", "postgresql"])
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    mq = MessageQueue(url_for(args.backend))
    mq.init_db()
    mq.drop_queue(QUEUE)
    mq.create_queue(QUEUE)
    for start in range(0, 2 * args.rounds + 100, 1000):
        mq.send_batch(QUEUE, [{"n": n} for n in range(start, start + 1000)])
    scratch_table(mq)
    backend = mq.backend
    dialect = backend.dialect
    mark = "?" if dialect == "sqlite" else "%s"
    bump = f"UPDATE bench_mq_reads SET n = n + {mark} WHERE queue = {mark} AND shard = {mark}"
    params = mq._read_params(QUEUE, 3600, 1, None)

    def counted() -> None:
        with backend.transaction():
            rows = mq._read_rows(params, None)
            cur = backend.conn.cursor()
            cur.execute(bump, (len(rows), QUEUE, random.randrange(SHARDS)))
            cur.close()

    ways: dict[str, Callable[[], object]] = {
        "read today": lambda: mq.read(QUEUE, vt=3600),
        "read + counter UPDATE in its transaction": counted,
    }
    if dialect == "postgresql":
        read_sql = queries("postgresql")["mq_read"]
        body = read_sql.split("UPDATE batchq_message AS m", 1)
        cte = (
            body[0].rstrip()
            + ", r AS (UPDATE batchq_message AS m"
            + body[1]
            + "), c AS (UPDATE bench_mq_reads SET n = n + (SELECT count(*) FROM r) "
            "WHERE queue = %(queue)s AND shard = %(shard)s) SELECT * FROM r"
        )

        def one() -> None:
            cur = backend.conn.cursor()
            cur.execute(cte, {**params, "shard": random.randrange(SHARDS)})
            cur.fetchall()
            cur.close()

        ways["read + counter as one statement (CTE)"] = one
    times: dict[str, list[float]] = {name: [] for name in ways}
    for r in range(args.rounds):
        order = list(ways) if r % 2 else list(reversed(ways))
        for name in order:
            start = time.perf_counter()
            ways[name]()
            times[name].append((time.perf_counter() - start) * 1000)
    base = median(times["read today"])
    rows = [
        [
            name,
            f"{median(ms):.3f}",
            f"{percentile(ms, 10):.3f}-{percentile(ms, 90):.3f}",
            f"{median(ms) / base:.2f}x",
        ]
        for name, ms in times.items()
    ]
    print(f"{args.backend}: read of one message, {args.rounds} rounds, one reader")
    print(table(["way", "ms (median)", "p10-p90", "vs today"], rows))
    print(command_line())
    mq.drop_queue(QUEUE)
    cur = backend.conn.cursor()
    cur.execute("DROP TABLE bench_mq_reads")
    cur.close()


if __name__ == "__main__":
    main()
