"""The PostgreSQL peers: procrastinate and pgqueuer, each in a database of its own.

Databases: the server and user of BENCH_POSTGRESQL_URL, named after its database with a
suffix (default batchq_bench_procrastinate and batchq_bench_pgqueuer), created if missing;
each peer's schema is installed by the peer's own installer, with its defaults (tables
logged: default durability). Both peers are asyncio workers on psycopg 3 here, as batchq is
on psycopg 3 (same driver, same server); bench/io_peers.py runs pgqueuer's worker on asyncpg
instead (see the pgqueuer paragraph). The job is `noop_jobs.noop(payload)` with the payload
{"i": n}, wrapped in an `async def` (each peer's cheapest job: no thread hop), and decoded
from the stored form as batchq decodes it (procrastinate passes its JSON arguments as
kwargs; pgqueuer hands over bytes, decoded with json.loads).

procrastinate (App + PsycopgConnector, a psycopg_pool pool, the pool's default connection
  check on every checkout):
  worker: one `procrastinate --app peers.procrastinate_app --log-level warning worker
    --one-shot` process per "proc", at its default concurrency of 1 (one job at a time per
    process); --one-shot exits when no job is left; warning level because its CLI logs two
    INFO lines per job otherwise (huey runs -q, pgqueuer --log-level WARNING). Defaults
    otherwise: listen/notify on, jobs kept after success (delete_jobs=never).
  per job: `SELECT procrastinate_fetch_job_v2(...)` (a plpgsql function: one UPDATE ...
    FROM (SELECT ... FOR UPDATE SKIP LOCKED LIMIT 1) to 'doing'; a trigger INSERTs a row in
    procrastinate_events), the task, then `SELECT procrastinate_finish_job_v1(...)` (UPDATE
    to 'succeeded', the row stays; the trigger INSERTs another event): two commits per job.
  enqueue: `noop.defer(payload=...)` (procrastinate_defer_jobs_v1: one INSERT + an event row
    + NOTIFY) and `noop.batch_defer(*100 kwargs)` (the same function, one call for 100 jobs),
    with the sync API (app.open(): a psycopg_pool ConnectionPool).

pgqueuer (PgQueuer on PsycopgDriver, one psycopg AsyncConnection per process, autocommit;
  the drains of process.py use this factory, peers:pgqueuer_main). That driver's NOTIFY watcher
  waits in psycopg's `notifies(timeout=1.0)`, holding the connection's lock for the wait, and
  the worker's statements queue behind it until a NOTIFY comes or the second is out. On the
  no-op drains here the worker's own statements keep NOTIFYing (the queue table's trigger), so
  the stall shows mainly at start-up: the first completion is flushed about 1 s later than on
  asyncpg (inside the timed drain), and a worker exits about 4 s after the queue is empty
  (untimed). On jobs that take time it stalls every dequeue round, so io_peers.py (I/O-bound
  jobs) runs pgqueuer on asyncpg (AsyncpgDriver).
  worker: one `pgq run --mode drain --batch-size B --log-level WARNING peers:pgqueuer_main`
    process per "proc" (drain exits once the queue is empty); no --max-concurrent-tasks
    (its default). Its CLI needs typer < 0.29 (with 0.29 `pgq run` fails: --log-level comes
    through as a str): typer is pinned in requirements.txt.
  per job: its dequeue statement (one UPDATE of up to B queued rows picked with FOR UPDATE
    SKIP LOCKED, to 'picked'), the job as an asyncio task, then its completion goes to a
    buffer that is flushed when it holds B entries (or after 0.1 s): one statement that
    DELETEs the jobs from the queue table and INSERTs them into pgqueuer_log. A row trigger
    NOTIFYs on every INSERT/UPDATE/DELETE of the queue table. With B=1 that is two commits
    per job, one row each (comparable with batchq's one row per transaction); with pgqueuer's
    default B=10, one dequeue and one completion statement per 10 jobs. Both are reported.
  enqueue: `SyncQueries.enqueue("noop", payload)` and its batch form (lists of 100): one
    statement (INSERT ... SELECT FROM UNNEST into the queue table and pgqueuer_log).

Drain timing, as for huey in process.py: from spawning the workers until the peer's queue
holds no unfinished job (polled every 20 ms); the workers then exit by themselves (untimed).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import noop_jobs
from settings import BIN_DIR, REPO_DIR, bench_env, url_for

POLL = 0.02  # seconds between "is the queue empty yet" checks while draining


def peer_url(suffix: str) -> str:
    """BENCH_POSTGRESQL_URL with `_<suffix>` appended to its database name."""
    parts = urlsplit(url_for("postgresql"))
    return urlunsplit(parts._replace(path=f"{parts.path}_{suffix}"))


def ensure_database(url: str) -> None:
    """CREATE DATABASE if missing (connecting to the server's `postgres` database)."""
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def _sql(url: str, statement: str, params: Any = None) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


class Peer:
    """What process.py and enqueue.py need from a peer."""

    name: str
    label: str
    url: str

    def setup(self) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        raise NotImplementedError

    def preload(self, n: int) -> None:
        raise NotImplementedError

    def pending(self) -> int:
        raise NotImplementedError

    def worker_cmd(self) -> list[str]:
        raise NotImplementedError

    @contextmanager
    def producer(self):  # -> (enqueue_one(i), enqueue_many(list of i))
        raise NotImplementedError
        yield

    def drain(self, jobs: int, procs: int, timeout: float = 600) -> float:
        """Pre-load `jobs` (untimed), start `procs` workers, time until the queue is empty."""
        self.setup()
        self.reset()
        self.preload(jobs)
        if self.pending() != jobs:
            raise RuntimeError(f"{self.name}: preload failed")
        env = bench_env("postgresql")
        t0 = time.perf_counter()
        workers = [
            subprocess.Popen(self.worker_cmd(), env=env, cwd=REPO_DIR, stdout=subprocess.DEVNULL)
            for _ in range(procs)
        ]
        try:
            while self.pending() > 0:
                # One worker may leave early (nothing left to take while others finish
                # theirs); all gone with jobs unfinished is a failure.
                if all(w.poll() is not None for w in workers) and self.pending() > 0:
                    codes = [w.poll() for w in workers]
                    raise RuntimeError(f"{self.name}: workers exited ({codes}) with jobs left")
                if time.perf_counter() - t0 > timeout:
                    raise RuntimeError(f"{self.name}: drain timed out")
                time.sleep(POLL)
            wall = time.perf_counter() - t0
            for w in workers:  # they exit on an empty queue by themselves
                w.wait(timeout=60)
        finally:
            for w in workers:
                if w.poll() is None:
                    w.kill()
                    w.wait()
        return wall


# -- procrastinate ---------------------------------------------------------------------


def _procrastinate_app() -> Any:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=peer_url("procrastinate")))

    @app.task(name="noop", queue="default")
    async def noop(payload: Any = None) -> None:
        noop_jobs.noop(payload)

    return app


def __getattr__(name: str) -> Any:
    # `procrastinate --app peers.procrastinate_app` loads this attribute; it is built on first
    # use so that importing peers needs neither procrastinate nor its database.
    if name == "procrastinate_app":
        app = globals()["procrastinate_app"] = _procrastinate_app()
        return app
    raise AttributeError(name)


class Procrastinate(Peer):
    name = "procrastinate"
    label = "procrastinate worker, concurrency 1 (its default): 2 commits/job"

    def __init__(self) -> None:
        self.url = peer_url("procrastinate")

    def setup(self) -> None:
        ensure_database(self.url)
        if not _sql(self.url, "SELECT to_regclass('procrastinate_jobs') IS NOT NULL")[0][0]:
            app = _procrastinate_app()
            with app.open():
                app.schema_manager.apply_schema()

    def reset(self) -> None:
        _sql(
            self.url,
            "TRUNCATE procrastinate_jobs, procrastinate_events, procrastinate_workers,"
            " procrastinate_periodic_defers RESTART IDENTITY CASCADE",
        )

    def preload(self, n: int) -> None:
        app = _procrastinate_app()
        task = app.tasks["noop"]
        with app.open():
            for lo in range(0, n, 1000):
                task.batch_defer(*({"payload": {"i": i}} for i in range(lo, min(n, lo + 1000))))
        _sql(self.url, "VACUUM (ANALYZE) procrastinate_jobs")  # as bulk_load does for batchq

    def pending(self) -> int:
        rows = _sql(self.url, "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')")
        return int(rows[0][0])

    def worker_cmd(self) -> list[str]:
        return [
            str(BIN_DIR / "procrastinate"),
            "--app",
            "peers.procrastinate_app",
            "--log-level",
            "warning",  # its CLI logs two INFO lines per job otherwise (huey runs -q)
            "worker",
            "--one-shot",
        ]

    @contextmanager
    def producer(self):
        app = _procrastinate_app()
        task = app.tasks["noop"]
        with app.open():

            def one(i: int) -> None:
                task.defer(payload={"i": i})

            def many(ids: Sequence[int]) -> None:
                task.batch_defer(*({"payload": {"i": i}} for i in ids))

            yield one, many


# -- pgqueuer -------------------------------------------------------------------------


@asynccontextmanager
async def pgqueuer_main() -> AsyncIterator[Any]:
    """The factory of `pgq run peers:pgqueuer_main`: one autocommit AsyncConnection."""
    import psycopg
    from pgqueuer import PgQueuer
    from pgqueuer.db import PsycopgDriver

    async with await psycopg.AsyncConnection.connect(peer_url("pgqueuer"), autocommit=True) as conn:
        pgq = PgQueuer(PsycopgDriver(conn))

        @pgq.entrypoint("noop")
        async def noop(job: Any) -> None:
            noop_jobs.noop(json.loads(job.payload))

        yield pgq


class PgQueuer(Peer):
    name = "pgqueuer"

    def __init__(self, batch_size: int = 10) -> None:
        self.url = peer_url("pgqueuer")
        self.batch_size = batch_size
        if batch_size == 1:
            self.label = "pgqueuer --batch-size 1: 2 commits/job, one row each"
        else:
            default = " (its default)" if batch_size == 10 else ""
            self.label = f"pgqueuer --batch-size {batch_size}{default}: 2 commits per {batch_size} jobs"

    def setup(self) -> None:
        ensure_database(self.url)
        if not _sql(self.url, "SELECT to_regclass('pgqueuer') IS NOT NULL")[0][0]:

            async def install() -> None:
                import psycopg
                from pgqueuer.db import PsycopgDriver
                from pgqueuer.queries import Queries

                async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
                    await Queries(PsycopgDriver(conn)).install()

            asyncio.run(install())

    def reset(self) -> None:
        _sql(self.url, "TRUNCATE pgqueuer, pgqueuer_log, pgqueuer_statistics RESTART IDENTITY")

    @contextmanager
    def _queries(self):
        import psycopg
        from pgqueuer.db import SyncPsycopgDriver
        from pgqueuer.queries import SyncQueries

        with psycopg.connect(self.url, autocommit=True) as conn:
            yield SyncQueries(SyncPsycopgDriver(conn))

    def preload(self, n: int) -> None:
        with self._queries() as q:
            for lo in range(0, n, 1000):
                ids = range(lo, min(n, lo + 1000))
                q.enqueue(["noop"] * len(ids), [_payload(i) for i in ids], [0] * len(ids))
        _sql(self.url, "VACUUM (ANALYZE) pgqueuer")

    def pending(self) -> int:
        return int(_sql(self.url, "SELECT count(*) FROM pgqueuer")[0][0])

    def worker_cmd(self) -> list[str]:
        return [
            str(BIN_DIR / "pgq"),
            "run",
            "--mode",
            "drain",
            "--batch-size",
            str(self.batch_size),
            "--log-level",
            "WARNING",
            "peers:pgqueuer_main",
        ]

    @contextmanager
    def producer(self):
        with self._queries() as q:

            def one(i: int) -> None:
                q.enqueue("noop", _payload(i))

            def many(ids: Sequence[int]) -> None:
                q.enqueue(["noop"] * len(ids), [_payload(i) for i in ids], [0] * len(ids))

            yield one, many


def _payload(i: int) -> bytes:
    return json.dumps({"i": i}, separators=(",", ":")).encode()


# process.py runs both pgqueuer settings; enqueue.py does not depend on the batch size.
DRAIN_PEERS: dict[str, Callable[[], Peer]] = {
    "procrastinate": Procrastinate,
    "pgqueuer-1": lambda: PgQueuer(batch_size=1),
    "pgqueuer-10": lambda: PgQueuer(batch_size=10),
}
ENQUEUE_PEERS: dict[str, Callable[[], Peer]] = {"procrastinate": Procrastinate, "pgqueuer": PgQueuer}
