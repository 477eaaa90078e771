"""batchq.aio: an awaited enqueue against the sync one, per backend and driver; and the loop.

    .venv/bin/python bench/async_enqueue.py [--n 1000] [--concurrent 200] [--backends sqlite,mysql,postgresql]

URLs: $BATCHQ_BENCH_MYSQL_URL / $BATCHQ_BENCH_POSTGRESQL_URL (else the test servers' batchq_bench
databases), SQLite a temporary file. Each row: --n enqueues one after another, the mean per call
(one untimed call first opens the connection):
  sync Queue            Queue(url).enqueue(...) (its own connection, autocommit)
  sync conn=            Queue.enqueue(..., conn=app) on a sync driver connection, one transaction
  async own (driver)    await AsyncQueue(url).enqueue(...) (a connection of its pool)
  async conn= (driver)  await aq.enqueue(..., conn=app) on an asyncio driver connection, one transaction
Then --concurrent enqueues at once (asyncio.gather) on the pool, with 1 and 4 connections: the
wall time, and the longest the loop went without running a 1 ms ticker (its responsiveness).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "apps")]

from batchq import Queue  # noqa: E402
from batchq.aio import AsyncQueue  # noqa: E402
from tests.support.aio import open_driver  # noqa: E402
from tests.support.db import app_connection, prepare_database  # noqa: E402

TASK = "jobs:noop"
URLS = {
    "mysql": os.environ.get("BATCHQ_BENCH_MYSQL_URL", "mysql://root@127.0.0.1:3306/batchq_bench_async"),
    "postgresql": os.environ.get(
        "BATCHQ_BENCH_POSTGRESQL_URL", "postgresql://postgres@127.0.0.1:5432/batchq_bench_async"
    ),
}
ASYNC_DRIVERS = {"mysql": ["asyncmy", "aiomysql"], "postgresql": ["psycopg"], "sqlite": ["aiosqlite"]}


def per_call_sync(url: str, n: int, app: bool) -> float:
    q = Queue(url, task_modules=["jobs"])
    conn = app_connection(url) if app else None
    q.enqueue(TASK, {"i": -1}, conn=conn)
    start = time.perf_counter()
    for i in range(n):
        q.enqueue(TASK, {"i": i}, conn=conn)
    elapsed = time.perf_counter() - start
    if conn is not None:
        conn.commit()
        conn.close()
    q.close()
    return elapsed / n


async def per_call_async(url: str, n: int, driver: str, app: bool) -> float:
    mysql_driver = driver if "my" in driver else "asyncmy"
    async with AsyncQueue(url, task_modules=["jobs"], mysql_driver=mysql_driver) as aq:
        conn = await open_driver(driver, url) if app else None
        await aq.enqueue(TASK, {"i": -1}, conn=conn)
        start = time.perf_counter()
        for i in range(n):
            await aq.enqueue(TASK, {"i": i}, conn=conn)
        elapsed = time.perf_counter() - start
        if conn is not None:
            await conn.commit()
            closed = conn.close()
            if closed is not None:
                await closed
    return elapsed / n


async def concurrent(url: str, count: int, pool_size: int, driver: str) -> tuple[float, float]:
    """(wall seconds for ``count`` concurrent enqueues, longest gap between ticks in ms)."""
    mysql_driver = driver if "my" in driver else "asyncmy"
    async with AsyncQueue(url, task_modules=["jobs"], pool_size=pool_size, mysql_driver=mysql_driver) as aq:
        await asyncio.gather(*[aq.enqueue(TASK, {"i": -1}) for _ in range(pool_size)])  # open them
        loop = asyncio.get_running_loop()
        gaps: list[float] = []
        stop = asyncio.Event()

        async def ticker() -> None:
            last = loop.time()
            while not stop.is_set():
                await asyncio.sleep(0.001)
                now = loop.time()
                gaps.append(now - last)
                last = now

        tick = asyncio.create_task(ticker())
        await asyncio.sleep(0.01)
        start = time.perf_counter()
        await asyncio.gather(*[aq.enqueue(TASK, {"i": i}) for i in range(count)])
        wall = time.perf_counter() - start
        stop.set()
        await tick
    return wall, max(gaps) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--concurrent", type=int, default=200)
    parser.add_argument("--backends", default="sqlite,mysql,postgresql")
    args = parser.parse_args()
    print(f"| backend | path | us per enqueue (n={args.n}) |")
    print("|---|---|---|")
    loops = []
    for backend in args.backends.split(","):
        url = URLS.get(backend) or f"sqlite:///{tempfile.mkdtemp()}/bench.db"
        prepare_database(backend, url)
        print(f"| {backend} | sync Queue | {per_call_sync(url, args.n, False) * 1e6:.0f} |")
        print(f"| {backend} | sync conn= | {per_call_sync(url, args.n, True) * 1e6:.0f} |")
        for driver in ASYNC_DRIVERS[backend]:
            own = asyncio.run(per_call_async(url, args.n, driver, False))
            print(f"| {backend} | async own ({driver}) | {own * 1e6:.0f} |")
            app = asyncio.run(per_call_async(url, args.n, driver, True))
            print(f"| {backend} | async conn= ({driver}) | {app * 1e6:.0f} |")
            for size in (1, 4):
                wall, gap = asyncio.run(concurrent(url, args.concurrent, size, driver))
                loops.append((backend, driver, size, wall, gap))
        prepare_database(backend, url)
    print()
    print(f"| backend | driver | pool | {args.concurrent} concurrent enqueues, ms | longest loop stall, ms |")
    print("|---|---|---|---|---|")
    for backend, driver, size, wall, gap in loops:
        print(f"| {backend} | {driver} | {size} | {wall * 1000:.0f} | {gap:.1f} |")


if __name__ == "__main__":
    main()
