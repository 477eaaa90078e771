"""The cost of one enqueue through each kind of conn= an app holds (issue 24).

    .venv/bin/python bench/app_conn.py --backend mysql|sqlite|postgresql --jobs 2000 --repeat 3

Each row enqueues --jobs jobs (`enqueue("noop_jobs:noop", {"i": i})`), one call timed at a time
(time.perf_counter around the call), and reports the median and p99 per call in microseconds and
the median against the raw driver connection's row:
  no conn=:       batchq's own connection, autocommit (the INSERT is its own transaction).
  raw driver:     conn= the driver connection the app opened (PyMySQL, psycopg 3, sqlite3),
                  in the app's transaction, committed every 100 jobs (the commit is not timed).
  mysqlclient:    conn= a MySQLdb connection (MySQL only), as the raw driver row.
  Django:         conn=django.db.connections[alias] inside transaction.atomic(), a block of
                  100 jobs (Django 5.2; MySQL through mysqlclient, as Django has it).
  SQLAlchemy Connection: conn= the Connection of `with engine.begin()`, 100 jobs per block.
  SQLAlchemy Session:    conn= a Session, session.commit() every 100 jobs.
The "unwrap" column is the part of that call spent turning conn= into the driver connection
(Backend.app_connection alone, timed over the same number of calls).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from batchq import Queue
from batchq.core.config import parse_url

from loads import reset
from options import parse, parser
from report import command_line, emit, table
from settings import TASK, url_for
from stats import median, percentile

BLOCK = 100  # jobs per app transaction


def driver_connection(url: str) -> Any:
    """The app's own connection, autocommit off (the drivers' default for sqlite3: implicit)."""
    parsed = parse_url(url)
    if parsed.dialect == "sqlite":
        import sqlite3

        return sqlite3.connect(parsed.database)
    if parsed.dialect == "mysql":
        import pymysql

        return pymysql.connect(
            host=parsed.host,
            port=parsed.port or 3306,
            user=parsed.user or "root",
            password=parsed.password,
            database=parsed.database,
            charset="utf8mb4",
        )
    import psycopg

    return psycopg.connect(
        host=parsed.host, port=parsed.port or 5432, user=parsed.user or "postgres", dbname=parsed.database
    )


def mysqlclient_connection(url: str) -> Any:
    import MySQLdb

    parsed = parse_url(url)
    return MySQLdb.connect(
        host=parsed.host,
        port=parsed.port or 3306,
        user=parsed.user or "root",
        password=parsed.password or "",
        database=parsed.database,
        charset="utf8mb4",
    )


def engine_url(url: str) -> str:
    parsed = parse_url(url)
    if parsed.dialect == "sqlite":
        return f"sqlite:///{parsed.database}"
    driver, port = ("pymysql", 3306) if parsed.dialect == "mysql" else ("psycopg", 5432)
    auth = parsed.user + (f":{parsed.password}" if parsed.password else "")
    return f"{parsed.dialect}+{driver}://{auth}@{parsed.host}:{parsed.port or port}/{parsed.database}"


def django_alias(url: str) -> str:
    """Configure Django (once per process) with the benchmark's database as alias "bench"."""
    import django
    from django.conf import settings

    parsed = parse_url(url)
    if parsed.dialect == "sqlite":
        db = {"ENGINE": "django.db.backends.sqlite3", "NAME": parsed.database}
    else:
        db = {
            "ENGINE": f"django.db.backends.{parsed.dialect}",
            "NAME": parsed.database,
            "USER": parsed.user or ("root" if parsed.dialect == "mysql" else "postgres"),
            "PASSWORD": parsed.password or "",
            "HOST": parsed.host,
            "PORT": str(parsed.port or ""),
        }
        if parsed.dialect == "mysql":
            db["OPTIONS"] = {"charset": "utf8mb4"}
    settings.configure(DATABASES={"default": db, "bench": db}, USE_TZ=True, INSTALLED_APPS=[])
    django.setup()
    return "bench"


# A kind: (what to pass as conn=, a context manager for one block of BLOCK jobs, cleanup).
Kind = tuple[Any, Callable[[], AbstractContextManager[Any]], Callable[[], None]]


def kinds(backend: str, url: str) -> dict[str, Callable[[], Kind | None]]:
    def no_conn() -> Kind:
        return None, _nothing, _nothing_to_close

    def raw(connect: Callable[[str], Any]) -> Callable[[], Kind]:
        def make() -> Kind:
            conn = connect(url)

            @contextmanager
            def block() -> Iterator[None]:
                yield
                conn.commit()

            return conn, block, conn.close

        return make

    def django_kind() -> Kind:
        from django.db import connections, transaction

        alias = django_alias(url)
        return connections[alias], lambda: transaction.atomic(using=alias), connections[alias].close

    def sa_connection() -> Kind:
        import sqlalchemy as sa

        engine = sa.create_engine(engine_url(url))
        holder: dict[str, Any] = {}

        @contextmanager
        def block() -> Iterator[None]:
            with engine.begin() as conn:
                holder["conn"] = conn
                yield

        return _Late(holder, "conn"), block, engine.dispose

    def sa_session() -> Kind:
        import sqlalchemy as sa
        from sqlalchemy.orm import Session

        engine = sa.create_engine(engine_url(url))
        session = Session(engine)

        @contextmanager
        def block() -> Iterator[None]:
            yield
            session.commit()

        def close() -> None:
            session.close()
            engine.dispose()

        return session, block, close

    table: dict[str, Callable[[], Kind | None]] = {
        "no conn= (own connection, autocommit)": no_conn,
        f"conn= raw driver ({_DRIVER[backend]})": raw(driver_connection),
    }
    if backend == "mysql":
        table["conn= mysqlclient (MySQLdb)"] = raw(mysqlclient_connection)
    table["conn= Django connection, in atomic()"] = django_kind
    table["conn= SQLAlchemy Connection (engine.begin())"] = sa_connection
    table["conn= SQLAlchemy Session"] = sa_session
    return table


_DRIVER = {"mysql": "PyMySQL", "postgresql": "psycopg 3", "sqlite": "sqlite3"}


class _Late:
    """The Connection of the block under way (engine.begin() makes one per block)."""

    def __init__(self, holder: dict[str, Any], key: str) -> None:
        self.holder, self.key = holder, key

    def get(self) -> Any:
        return self.holder[self.key]


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _nothing_to_close() -> None:
    pass


def measure(queue: Queue, kind: Kind, jobs: int) -> tuple[list[float], list[float]]:
    """Per-call seconds of enqueue, and of unwrapping conn= alone."""
    conn, block, _ = kind
    calls, unwraps = [], []
    enqueue, app_connection, perf = queue.enqueue, queue.backend.app_connection, time.perf_counter
    for start in range(0, jobs, BLOCK):
        with block():
            given = conn.get() if isinstance(conn, _Late) else conn
            for i in range(start, min(start + BLOCK, jobs)):
                t0 = perf()
                enqueue(TASK, {"i": i}, conn=given)
                calls.append(perf() - t0)
                if given is not None:
                    t0 = perf()
                    app_connection(given)
                    unwraps.append(perf() - t0)
    return calls, unwraps


def main() -> None:
    ap = parser(__doc__, jobs=2000, quick={"jobs": 300, "repeat": 1})
    args = parse(ap)
    url = url_for(args.backend)
    reset(args.backend)
    queue = Queue(url, task_modules=["noop_jobs"])
    results: dict[str, tuple[list[float], list[float], list[float]]] = {}
    for name, make in kinds(args.backend, url).items():
        kind = make()
        assert kind is not None
        measure(queue, kind, BLOCK)  # warm: connections open, caches filled
        medians, p99s, unwraps = [], [], []
        for _ in range(args.repeat):
            reset(args.backend)
            calls, unwrapped = measure(queue, kind, args.jobs)
            medians.append(median(calls))
            p99s.append(percentile(calls, 99))
            unwraps.extend(unwrapped)
        kind[2]()
        results[name] = (medians, p99s, unwraps)
    raw = median(next(v[0] for k, v in results.items() if k.startswith("conn= raw")))
    rows = []
    for name, (medians, p99s, unwraps) in results.items():
        rows.append(
            [
                name,
                f"{median(medians) * 1e6:,.1f}",
                f"{median(p99s) * 1e6:,.1f}",
                f"{median(medians) / raw:.2f}×",
                f"{median(unwraps) * 1e6:.2f}" if unwraps else "–",
            ]
        )
    text = table(["enqueue", "median µs", "p99 µs", "vs raw driver", "unwrap µs"], rows)
    emit(
        f"Enqueue per kind of conn=, {args.backend}",
        f"{command_line()}\n\n{text}",
        f"app_conn_{args.backend}",
    )
    queue.close()


if __name__ == "__main__":
    main()
