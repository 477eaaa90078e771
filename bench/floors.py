"""The raw-driver floors: batchq's own statements on a bare connection, no library around them.

Every statement comes from ``batchq.backends.sqlfiles.queries(dialect)`` (the very text batchq runs), and so
does the session setup: each floor runs its backend's ``SESSION_QUERIES`` by name, as batchq's
backend does on connect. The only derived statement is the multi-row enqueue (the enqueue
row repeated, one statement, as batchq's MySQL enqueue_many sends). Adding a backend means
adding one ``Floor`` subclass and one entry in ``FLOORS`` (and its URL in settings.URLS).

Drivers are imported by the floor that uses them (PyMySQL for MySQL/MariaDB, psycopg for
PostgreSQL), so a missing driver only breaks its own backend.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

try:
    from batchq.backends.sqlfiles import queries
    from batchq.core.config import parse_url
except ImportError:  # an older checkout a bench runs beside this one (--checkout), before the parts
    from batchq.config import parse_url  # type: ignore[no-redef]
    from batchq.sqlfiles import queries  # type: ignore[no-redef]
try:
    from batchq.stores.jobs import enqueue_statement
except ImportError:  # before enqueue_now (issue 29): every job took enqueue

    def enqueue_statement(name: str, template: dict[str, Any]) -> str:
        return name


from settings import TASK, url_for


def payload_bytes(i: int) -> bytes:
    """What batchq stores for the payload {"i": i} (json, compact separators)."""
    return json.dumps({"i": i}, separators=(",", ":")).encode()


def _renamed(sql: str, style: str, suffix: str) -> str:
    if style == "pyformat":
        return re.sub(r"%\((\w+)\)s", lambda m: f"%({m.group(1)}_{suffix})s", sql)
    return re.sub(r":(\w+)", lambda m: f":{m.group(1)}_{suffix}", sql)


def multi_row_insert(sql: str, rows: int, style: str) -> str:
    """The enqueue INSERT with its VALUES row repeated ``rows`` times (params suffixed _0.._n);
    a trailing RETURNING clause (PostgreSQL) is kept once, at the end."""
    head, sep, row = sql.partition("VALUES")
    if not sep:
        raise RuntimeError("enqueue statement has no VALUES")
    row, returning, tail = row.partition("RETURNING")
    values = ",\n".join(_renamed(row.strip(), style, str(i)) for i in range(rows))
    return head + "VALUES " + values + (f"\n{returning} {tail.strip()}" if returning else "")


class Floor:
    """The fastest a client can run batchq's statements: raw driver, no library around them."""

    dialect: str
    style: str  # paramstyle of the dialect's SQL files

    def __init__(self, url: str) -> None:
        self.url = parse_url(url)
        self.q = queries(self.dialect)
        self.conn = self.connect()
        self._multi: dict[tuple[str, int], str] = {}

    def connect(self) -> Any:
        raise NotImplementedError

    @staticmethod
    def row(i: int, delay: float = 0.0) -> dict[str, Any]:
        return {
            "queue": "default",
            "task": TASK,
            "payload": payload_bytes(i),
            "serializer": "json",
            "priority": 0,
            "max_errors": 10,
            "delay": delay,
            # the rest of batchq's enqueue statement, as Queue.enqueue fills it for a plain job
            "at": None,
            "concurrency_key": None,
            "concurrency_limit": None,
            "timeout": None,
            "task_version": 1,
            "backoff": None,
            "keep_result": None,
            "expires": None,
            "expires_at": None,
            "trace_context": None,
            "rate_key": None,
            "rate_limit": None,
            "rate_period": None,
            "partitions": 1,
        }

    def enqueue_sql(self, row: dict[str, Any]) -> str:
        """The statement batchq sends for ``row``: enqueue_now for a job due now, else enqueue."""
        return self.q[enqueue_statement("enqueue", row)]  # type: ignore[no-any-return]

    def multi_sql(self, rows: Sequence[dict[str, Any]]) -> str:
        """The enqueue statement for ``rows`` (alike but for their payloads), its row repeated."""
        key = (enqueue_statement("enqueue", rows[0]), len(rows))
        if key not in self._multi:
            self._multi[key] = multi_row_insert(self.q[key[0]], len(rows), self.style)
        return self._multi[key]

    @staticmethod
    def multi_params(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return {f"{k}_{i}": v for i, row in enumerate(rows) for k, v in row.items()}

    def claim(
        self, worker: str, token: str, limit: int = 1, done: Sequence[tuple] = ()
    ) -> tuple[int, list[tuple]]:
        """batchq's cycle (jobs_claim): delete the finished jobs ``done`` (rows as claimed, with
        their token) and claim up to ``limit`` jobs, in one transaction. (deleted, job rows)."""
        raise NotImplementedError

    def ack(self, jobs: Sequence[tuple], token: str) -> int:
        """jobs_delete in autocommit: the finished jobs alone, a commit of their own."""
        raise NotImplementedError

    def drain(self, worker: str, call: Callable[[Any], Any], limit: int = 1, fused: bool = True) -> int:
        """Claim and ``call`` each job's stored payload until the queue is empty; the finished
        jobs are deleted with the next claim (fused: one commit per claim, as `batchq run`), or
        each batch by a DELETE of its own (two commits per claim). Returns the jobs done."""
        done, count, token = [], 0, ""
        while True:
            next_token = os.urandom(16).hex()
            if fused:
                _, jobs = self.claim(worker, next_token, limit, [(job, token) for job in done])
            else:
                if done:
                    self.ack(done, token)
                _, jobs = self.claim(worker, next_token, limit)
            if not jobs:
                return count
            for job in jobs:
                call(job[3])  # the payload, as stored (the floor does not decode it)
            done, count, token = jobs, count + len(jobs), next_token

    def begin(self) -> None:
        """Open a transaction (for EXPLAIN ANALYZE and rolled-back claims in scale.py)."""
        raise NotImplementedError

    def execute(self, sql: str, params: Any = None) -> list[tuple]:
        raise NotImplementedError

    def close(self) -> None:
        self.conn.close()


class MySQLFloor(Floor):
    dialect = "mysql"
    style = "pyformat"

    def connect(self) -> Any:
        import pymysql
        from pymysql.constants import CLIENT

        from batchq.backends.mysql import SESSION_QUERIES

        u = self.url
        conn = pymysql.connect(
            host=u.host,
            port=u.port or 3306,
            user=u.user or "root",
            password=u.password,
            database=u.database,
            charset="utf8mb4",
            autocommit=True,
            client_flag=CLIENT.FOUND_ROWS | CLIENT.MULTI_STATEMENTS,
        )
        self.cur = conn.cursor()
        for name in SESSION_QUERIES:  # batchq's session: UTC, strict, READ COMMITTED
            self.cur.execute(self.q[name])
        return conn

    def enqueue(self, row: dict[str, Any]) -> None:
        self.cur.execute(self.enqueue_sql(row), row)

    def enqueue_multi(self, rows: Sequence[dict[str, Any]]) -> None:
        # One statement is one transaction in autocommit.
        self.cur.execute(self.multi_sql(rows), self.multi_params(rows))

    def claim(
        self, worker: str, token: str, limit: int = 1, done: Sequence[tuple] = ()
    ) -> tuple[int, list[tuple]]:
        # As batchq: jobs_claim (one multi-statement query), then jobs_claim_mark or COMMIT.
        cur = self.cur
        params = {
            "queue": "default",
            "limit": limit,
            "done_token": done[0][1] if done else None,
            "done_ids": [job[0] for job, _ in done] or [None],
        }
        cur.execute(self.q["jobs_claim"], params)  # SET TRANSACTION; START; DELETE; SELECT
        cur.nextset()
        cur.nextset()
        deleted = cur.rowcount
        cur.nextset()
        jobs = list(cur.fetchall())
        while cur.nextset():
            pass
        if jobs:
            mark = {"ids": [job[0] for job in jobs], "worker": worker, "token": token}
            cur.execute(self.q["jobs_claim_mark"], mark)
            while cur.nextset():
                pass
        else:
            self.conn.commit()
        return deleted, jobs

    def ack(self, jobs: Sequence[tuple], token: str) -> int:
        return self.cur.execute(self.q["jobs_delete"], {"ids": [job[0] for job in jobs], "token": token})

    def begin(self) -> None:
        self.conn.begin()

    def execute(self, sql: str, params: Any = None) -> list[tuple]:
        self.cur.execute(sql, params)
        return list(self.cur.fetchall())


class SQLiteFloor(Floor):
    dialect = "sqlite"
    style = "named"

    def connect(self) -> Any:
        from batchq.backends.sqlite import SESSION_QUERIES

        Path(self.url.database).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.url.database, timeout=30, isolation_level=None)
        for name in SESSION_QUERIES:  # batchq's pragmas: WAL, foreign keys
            conn.execute(self.q[name])
        return conn

    def enqueue(self, row: dict[str, Any]) -> None:
        self.conn.execute(self.enqueue_sql(row), row)

    def enqueue_multi(self, rows: Sequence[dict[str, Any]]) -> None:
        # Autocommit: the one statement is its own transaction.
        self.conn.execute(self.multi_sql(rows), self.multi_params(rows))

    def claim(
        self, worker: str, token: str, limit: int = 1, done: Sequence[tuple] = ()
    ) -> tuple[int, list[tuple]]:
        # As batchq: BEGIN IMMEDIATE; jobs_delete (if any); jobs_claim; COMMIT.
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        deleted = self.ack([job for job, _ in done], done[0][1]) if done else 0
        params = {"queue": "default", "worker": worker, "token": token, "limit": limit}
        jobs = conn.execute(self.q["jobs_claim"], params).fetchall()
        conn.execute("COMMIT")
        return deleted, jobs

    def ack(self, jobs: Sequence[tuple], token: str) -> int:
        ids = json.dumps([job[0] for job in jobs])
        return self.conn.execute(self.q["jobs_delete"], {"ids": ids, "token": token}).rowcount

    def begin(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def execute(self, sql: str, params: Any = None) -> list[tuple]:
        return self.conn.execute(sql, params or ()).fetchall()


class PostgreSQLFloor(Floor):
    """psycopg 3 in autocommit, as batchq's PostgreSQL backend: every claim is ONE statement
    (jobs_claim: data-modifying CTEs), a transaction by itself; BEGIN only where batchq opens one
    (enqueue_many)."""

    dialect = "postgresql"
    style = "pyformat"

    def connect(self) -> Any:
        import psycopg

        from batchq.backends.postgresql import SESSION_QUERIES

        u = self.url
        # The connection batchq's backend opens: autocommit, tuple rows (psycopg's default),
        # the same startup parameters, then its session setup (UTC).
        params: dict[str, Any] = {"connect_timeout": "10", "application_name": "batchq", **u.options}
        conn = psycopg.connect(
            host=u.host,
            port=u.port or 5432,
            user=u.user or None,
            password=u.password or None,
            dbname=u.database,
            autocommit=True,
            **params,
        )
        for name in SESSION_QUERIES:
            conn.execute(self.q[name])
        self.cur = conn.cursor()
        return conn

    def enqueue(self, row: dict[str, Any]) -> None:
        self.cur.execute(self.enqueue_sql(row), row)
        self.cur.fetchone()  # RETURNING id (already received with the result)

    def enqueue_multi(self, rows: Sequence[dict[str, Any]]) -> None:
        # batchq's PostgreSQL enqueue_many: BEGIN; executemany(enqueue) (psycopg sends the
        # rows as one pipeline: one round trip, one INSERT statement per row); COMMIT.
        self.cur.execute("BEGIN")
        self.cur.executemany(self.enqueue_sql(rows[0]), rows)
        self.conn.commit()

    def enqueue_multi_row(self, rows: Sequence[dict[str, Any]]) -> None:
        """A reference, not batchq's path on PostgreSQL: ONE multi-row INSERT in autocommit
        (the enqueue VALUES row repeated, as batchq's MySQL enqueue_many sends)."""
        self.cur.execute(self.multi_sql(rows), self.multi_params(rows))

    def claim(
        self, worker: str, token: str, limit: int = 1, done: Sequence[tuple] = ()
    ) -> tuple[int, list[tuple]]:
        # As batchq: jobs_claim, one statement in autocommit (its own transaction).
        params = {
            "queue": "default",
            "limit": limit,
            "worker": worker,
            "token": token,
            "done_token": done[0][1] if done else None,
            "done_ids": [job[0] for job, _ in done],
        }
        self.cur.execute(self.q["jobs_claim"], params)
        rows = self.cur.fetchall()
        return int(rows[0][-1]), [row for row in rows if row[0] is not None]

    def ack(self, jobs: Sequence[tuple], token: str) -> int:
        self.cur.execute(self.q["jobs_delete"], {"ids": [job[0] for job in jobs], "token": token})
        return int(self.cur.rowcount)

    def begin(self) -> None:
        self.cur.execute("BEGIN")  # on the autocommit connection; conn.rollback() ends it

    def execute(self, sql: str, params: Any = None) -> list[tuple]:
        self.cur.execute(sql, params)
        return list(self.cur.fetchall()) if self.cur.description else []


FLOORS: dict[str, type[Floor]] = {"mysql": MySQLFloor, "sqlite": SQLiteFloor, "postgresql": PostgreSQLFloor}


def floor_for(backend: str) -> Floor:
    return FLOORS[backend](url_for(backend))
