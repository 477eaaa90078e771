"""huey, the peer: one app per storage, chosen with $BENCH_HUEY (mysql-sql, postgresql-sql,
sqlite-sql, sqlite).

mysql-sql:  huey.contrib.sql_huey.SqlHuey on peewee's MySQLDatabase (PyMySQL), database batchq_bench
postgresql-sql: SqlHuey on peewee's PostgresqlDatabase, which uses psycopg 3 when psycopg2 is
            not installed (it is not: batchq's driver serves), at $BENCH_POSTGRESQL_URL
            (database batchq_bench); huey's dequeue there is SELECT ... FOR UPDATE SKIP LOCKED
            + DELETE in one transaction
sqlite-sql: SqlHuey on peewee's SqliteDatabase, WAL (as batchq and SqliteHuey use)
sqlite:     huey's own SqliteHuey (WAL by default)

Consumer: `huey_consumer huey_app.huey -w N -k process -q` with PYTHONPATH=bench.
"""

from __future__ import annotations

import os

from huey import SqliteHuey
from huey.contrib.sql_huey import SqlHuey
from peewee import MySQLDatabase, PostgresqlDatabase, SqliteDatabase

import noop_jobs
from settings import url_for

KIND = os.environ.get("BENCH_HUEY", "sqlite")
DIR = os.environ.get("BENCH_HUEY_DIR", "/tmp/batchq_bench")
os.makedirs(DIR, exist_ok=True)

if KIND == "mysql-sql":
    huey = SqlHuey(
        "bench",
        database=MySQLDatabase(
            os.environ.get("BENCH_HUEY_MYSQL_DB", "batchq_bench"),
            host="127.0.0.1",
            port=3306,
            user="root",
            charset="utf8mb4",
        ),
    )
elif KIND == "postgresql-sql":
    huey = SqlHuey(
        "bench",
        database=PostgresqlDatabase(url_for("postgresql"), prefer_psycopg3=True),
    )
elif KIND == "sqlite-sql":
    huey = SqlHuey("bench", database=SqliteDatabase(f"{DIR}/huey_sql.db", pragmas={"journal_mode": "wal"}))
elif KIND == "sqlite":
    huey = SqliteHuey("bench", filename=f"{DIR}/huey.db")
else:
    raise SystemExit(f"unknown BENCH_HUEY {KIND!r}")


@huey.task()
def noop(payload=None):
    noop_jobs.noop(payload)


def flush() -> None:
    huey.flush()


def preload(n: int) -> None:
    """Put n no-op tasks in huey's task table in bulk (setup only, never timed)."""
    blobs = [huey.serialize_task(noop.s({"i": i})) for i in range(n)]
    storage = huey.storage
    if KIND == "sqlite":
        with storage.db(commit=True) as curs:
            curs.executemany(
                "insert into task (queue, data, priority) values (?, ?, ?)",
                [(storage.name, b, 0) for b in blobs],
            )
    else:
        with storage.database.atomic():
            for lo in range(0, n, 1000):
                storage.Task.insert_many(
                    [{"queue": storage.name, "data": b, "priority": 0} for b in blobs[lo : lo + 1000]]
                ).execute()
        if KIND == "postgresql-sql":
            # As bench/loads.py's bulk_load does for batchq's table on the same server.
            storage.database.execute_sql("VACUUM (ANALYZE) task")


def pending() -> int:
    return huey.pending_count()
