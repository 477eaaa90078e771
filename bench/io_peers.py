"""The peers of bench/io_jobs.py, running io_tasks' jobs: procrastinate and pgqueuer (PostgreSQL,
async tasks), huey (MariaDB, SqlHuey, sync tasks).

Each peer's database, schema, reset and queue count are bench/peers.py's and bench/huey_app.py's;
what differs is the tasks (io_tasks' bodies, under the same names) and the worker's concurrency:

procrastinate  `procrastinate --app io_peers.procrastinate_app --log-level warning worker
               --one-shot --concurrency N`: N jobs at once as asyncio tasks in one process;
               the tasks are `async def` wrappers around io_tasks.async_sleep_10ms and
               async_http_get. Jobs are kept after success (its default), as in peers.py.
pgqueuer       `pgq run --mode drain --max-concurrent-tasks N --batch-size N/2 --log-level
               WARNING io_peers:pgqueuer_main`: at most N picked jobs at once in one process;
               pgqueuer refuses a --max-concurrent-tasks below twice the batch size, so N/2 is
               the largest batch it allows (its default is 10). The worker runs on asyncpg
               (AsyncpgDriver on one asyncpg connection, the set-up of pgqueuer's own quick
               start; asyncpg is pinned in requirements.txt), not on peers.py's PsycopgDriver:
               that driver's NOTIFY watcher waits in psycopg's `notifies(timeout=1.0)`, which
               holds the connection's lock for the whole wait, and every statement of the worker
               (dequeue, the drain-mode "any work left" probes, the completion flush) takes that
               lock too. On a pre-loaded queue of jobs that take time, no NOTIFY comes to end the
               wait, so each dequeue round waited out the second: 3 to 4 jobs/s at N = 8.
               asyncpg delivers NOTIFYs by callback, with no reader holding the connection.
               The schema install and the pre-load stay on psycopg (peers.py).
huey           `huey_consumer io_peers.huey -w N -k thread -q`: one process, N worker threads,
               SqlHuey on MariaDB (huey_app.py's mysql-sql, in $BENCH_HUEY_MYSQL_DB), the
               sync tasks io_tasks.sleep_10ms and http_get.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import io_tasks
import peers
from settings import BIN_DIR


def _procrastinate_app() -> Any:
    import procrastinate

    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(conninfo=peers.peer_url("procrastinate"))
    )

    def register(name: str) -> None:
        body = getattr(io_tasks, name)

        async def run(payload: Any = None) -> None:
            await body(payload)

        run.__name__ = name
        app.task(name=name, queue="default")(run)

    for name in io_tasks.ASYNC:
        register(name)
    return app


HUEY_TASKS: dict[str, Any] = {}  # task name -> huey's TaskWrapper


def _huey() -> Any:
    os.environ.setdefault("BENCH_HUEY", "mysql-sql")
    import huey_app

    for name in io_tasks.SYNC:
        HUEY_TASKS[name] = huey_app.huey.task(name=name)(getattr(io_tasks, name))
    return huey_app.huey


def __getattr__(name: str) -> Any:
    # Built on first use (`procrastinate --app io_peers.procrastinate_app`, `huey_consumer
    # io_peers.huey`), so that each worker imports only its own peer.
    if name == "procrastinate_app":
        app = globals()["procrastinate_app"] = _procrastinate_app()
        return app
    if name == "huey":
        huey = globals()["huey"] = _huey()
        return huey
    raise AttributeError(name)


@asynccontextmanager
async def pgqueuer_main() -> AsyncIterator[Any]:
    """The factory of `pgq run io_peers:pgqueuer_main`: one asyncpg connection (AsyncpgDriver)."""
    import asyncpg
    from pgqueuer import PgQueuer
    from pgqueuer.db import AsyncpgDriver

    conn = await asyncpg.connect(peers.peer_url("pgqueuer"))
    try:
        pgq = PgQueuer(AsyncpgDriver(conn))

        def register(name: str) -> None:
            body = getattr(io_tasks, name)

            async def run(job: Any) -> None:
                await body(json.loads(job.payload))

            pgq.entrypoint(name)(run)

        for name in io_tasks.ASYNC:
            register(name)
        yield pgq
    finally:
        await conn.close()


class Procrastinate(peers.Procrastinate):
    label = "procrastinate worker --concurrency {n}"

    def preload_task(self, task: str, n: int) -> None:
        app = globals().get("procrastinate_app") or __getattr__("procrastinate_app")
        with app.open():
            for lo in range(0, n, 1000):
                app.tasks[task].batch_defer(*({"payload": {"i": i}} for i in range(lo, min(n, lo + 1000))))
        peers._sql(self.url, "VACUUM (ANALYZE) procrastinate_jobs")

    pending_sql = "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"  # as peers.py

    def failed(self) -> int:
        return int(
            peers._sql(self.url, "SELECT count(*) FROM procrastinate_jobs WHERE status <> 'succeeded'")[0][0]
        )

    def io_worker_cmd(self, concurrency: int) -> list[str]:
        return [*self.worker_cmd(), "--concurrency", str(concurrency)]

    def worker_cmd(self) -> list[str]:
        cmd = super().worker_cmd()
        cmd[cmd.index("peers.procrastinate_app")] = "io_peers.procrastinate_app"
        return cmd


class PgQueuer(peers.PgQueuer):
    label = "pgqueuer --max-concurrent-tasks {n} --batch-size {b}"

    def preload_task(self, task: str, n: int) -> None:
        with self._queries() as q:
            for lo in range(0, n, 1000):
                ids = range(lo, min(n, lo + 1000))
                q.enqueue([task] * len(ids), [peers._payload(i) for i in ids], [0] * len(ids))
        peers._sql(self.url, "VACUUM (ANALYZE) pgqueuer")

    pending_sql = "SELECT count(*) FROM pgqueuer"

    def failed(self) -> int:
        return int(peers._sql(self.url, "SELECT count(*) FROM pgqueuer_log WHERE status = 'exception'")[0][0])

    def io_worker_cmd(self, concurrency: int) -> list[str]:
        cmd = self.worker_cmd()
        cmd[cmd.index("peers:pgqueuer_main")] = "io_peers:pgqueuer_main"
        return cmd[:2] + ["--max-concurrent-tasks", str(concurrency)] + cmd[2:]


def huey_preload(task: str, n: int) -> None:
    """n jobs of ``task`` in huey's task table, in bulk (as huey_app.preload does for its no-op)."""
    huey = globals().get("huey") or __getattr__("huey")
    huey.flush()
    blobs = [huey.serialize_task(HUEY_TASKS[task].s({"i": i})) for i in range(n)]
    storage = huey.storage
    with storage.database.atomic():
        for lo in range(0, n, 1000):
            storage.Task.insert_many(
                [{"queue": storage.name, "data": b, "priority": 0} for b in blobs[lo : lo + 1000]]
            ).execute()
    storage.database.execute_sql("ANALYZE TABLE task")
    storage.close()


def huey_worker_cmd(concurrency: int) -> list[str]:
    return [str(BIN_DIR / "huey_consumer"), "io_peers.huey", "-w", str(concurrency), "-k", "thread", "-q"]
