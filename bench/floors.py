"""The raw-driver floors: batchq's own statements on a bare connection, no library around them.

Every statement comes from ``batchq.sql.queries(dialect)`` (the very text batchq runs), and so
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

from batchq.config import parse_url
from batchq.sql import queries

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
    style: str  # paramstyle of the dialect's queries.sql

    def __init__(self, url: str) -> None:
        self.url = parse_url(url)
        self.q = queries(self.dialect)
        self.conn = self.connect()
        self._multi: dict[int, str] = {}

    def connect(self) -> Any:
        raise NotImplementedError

    @staticmethod
    def row(i: int, delay_us: int = 0) -> dict[str, Any]:
        seconds = delay_us / 1e6
        return {
            "queue": "default",
            "task": TASK,
            "payload": payload_bytes(i),
            "serializer": "json",
            "priority": 0,
            "max_errors": 10,
            "delay_us": delay_us,
            "delay_modifier": f"+{seconds:.6f} seconds",
        }

    def multi_sql(self, n: int) -> str:
        if n not in self._multi:
            self._multi[n] = multi_row_insert(self.q["enqueue"], n, self.style)
        return self._multi[n]

    @staticmethod
    def multi_params(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return {f"{k}_{i}": v for i, row in enumerate(rows) for k, v in row.items()}

    # Transactions: claim_at/claim_batch_at open their own unless one is already open, as
    # batchq's Backend.transaction() joins an outer one.
    _in_txn = False

    def begin(self) -> None:
        raise NotImplementedError

    def commit(self) -> None:
        self.conn.commit()

    def ack_and_claim(self, job_id: int, old_token: str, worker: str, token: str) -> tuple | None:
        """batchq run's cycle: DELETE the finished job and claim the next in one transaction."""
        self.begin()
        self._in_txn = True
        try:
            self.ack(job_id, old_token)
            job = self.claim(worker, token)
        finally:
            self._in_txn = False
        self.commit()
        return job

    def drain_fused(self, worker: str, call: Callable[[Any], Any]) -> int:
        """Run the fused cycle until the queue is empty: ``call`` each job's stored payload,
        then DELETE it and claim the next in one transaction. Returns the jobs done."""
        done = 0
        token = os.urandom(16).hex()
        job = self.claim(worker, token)
        while job is not None:
            call(job[3])  # the payload, as stored (the floor does not decode it)
            done += 1
            next_token = os.urandom(16).hex()
            job = self.ack_and_claim(job[0], token, worker, next_token)
            token = next_token
        return done

    def level(self, below: int) -> int | None:
        """batchq's first claim statement: the top priority level with ready jobs."""
        rows = self.execute(self.q["next_priority"], {"queue": "default", "below": below})
        return rows[0][0] if rows else None

    def execute(self, sql: str, params: Any = None) -> list[tuple]:
        raise NotImplementedError

    def claim(self, worker: str, token: str) -> tuple | None:
        """batchq's claim: level by level, one priority level per short transaction."""
        below = 32768
        while (level := self.level(below)) is not None:
            job = self.claim_at(level, worker, token)
            if job is not None:
                return job
            below = level
        return None

    def claim_batch(self, n: int, worker: str, token: str) -> list[tuple]:
        below = 32768
        while (level := self.level(below)) is not None:
            jobs = self.claim_batch_at(level, n, worker, token)
            if jobs:
                return jobs
            below = level
        return []

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
            client_flag=CLIENT.FOUND_ROWS,
        )
        self.cur = conn.cursor()
        for name in SESSION_QUERIES:  # batchq's session: UTC, strict, READ COMMITTED
            self.cur.execute(self.q[name])
        return conn

    def begin(self) -> None:
        self.conn.begin()

    def enqueue(self, row: dict[str, Any]) -> None:
        self.cur.execute(self.q["enqueue"], row)

    def enqueue_multi(self, rows: Sequence[dict[str, Any]]) -> None:
        # One statement is one transaction in autocommit.
        self.cur.execute(self.multi_sql(len(rows)), self.multi_params(rows))

    def claim_at(self, level: int, worker: str, token: str) -> tuple | None:
        cur, own = self.cur, not self._in_txn
        if own:
            self.begin()
        cur.execute(self.q["claim_select_skip_locked"], {"queue": "default", "priority": level})
        job = cur.fetchone()
        if job is not None:
            cur.execute(self.q["claim_mark"], {"id": job[0], "worker": worker, "token": token})
        if own:
            self.commit()
        return job

    def ack(self, job_id: int, token: str) -> None:
        self.cur.execute(self.q["job_delete"], {"id": job_id, "token": token})

    def claim_batch_at(self, level: int, n: int, worker: str, token: str) -> list[tuple]:
        cur = self.cur
        self.conn.begin()
        cur.execute(
            self.q["claim_batch_select_skip_locked"], {"queue": "default", "priority": level, "limit": n}
        )
        jobs = list(cur.fetchall())
        if jobs:
            ids = [job[0] for job in jobs]
            cur.execute(self.q["claim_batch_mark"], {"ids": ids, "worker": worker, "token": token})
        self.conn.commit()
        return jobs

    def ack_batch(self, ids: Sequence[int], token: str) -> None:
        self.cur.execute(self.q["job_delete_batch"], {"ids": list(ids), "token": token})

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

    def begin(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def enqueue(self, row: dict[str, Any]) -> None:
        self.conn.execute(self.q["enqueue"], row)

    def enqueue_multi(self, rows: Sequence[dict[str, Any]]) -> None:
        # Autocommit: the one statement is its own transaction.
        self.conn.execute(self.multi_sql(len(rows)), self.multi_params(rows))

    def claim_at(self, level: int, worker: str, token: str) -> tuple | None:
        own = not self._in_txn
        if own:
            self.begin()
        params = {"queue": "default", "priority": level, "worker": worker, "token": token}
        job = self.conn.execute(self.q["claim"], params).fetchone()
        if own:
            self.commit()
        return job

    def ack(self, job_id: int, token: str) -> None:
        self.conn.execute(self.q["job_delete"], {"id": job_id, "token": token})

    def claim_batch_at(self, level: int, n: int, worker: str, token: str) -> list[tuple]:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        params = {"queue": "default", "priority": level, "worker": worker, "token": token, "limit": n}
        jobs = conn.execute(self.q["claim_batch"], params).fetchall()
        conn.execute("COMMIT")
        return jobs

    def ack_batch(self, ids: Sequence[int], token: str) -> None:
        self.conn.execute(self.q["job_delete_batch"], {"ids_json": json.dumps(list(ids)), "token": token})

    def execute(self, sql: str, params: Any = None) -> list[tuple]:
        return self.conn.execute(sql, params or ()).fetchall()


class PostgreSQLFloor(Floor):
    """psycopg 3 in autocommit, as batchq's PostgreSQL backend: every claim is ONE statement
    (UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED) RETURNING), a transaction by
    itself, with no BEGIN/COMMIT around it; BEGIN only where batchq opens one (the fused
    cycle, enqueue_many)."""

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

    def begin(self) -> None:
        # As batchq: BEGIN on the autocommit connection; conn.commit() then sends COMMIT.
        self.cur.execute("BEGIN")

    def enqueue(self, row: dict[str, Any]) -> None:
        self.cur.execute(self.q["enqueue"], row)
        self.cur.fetchone()  # RETURNING id (already received with the result)

    def enqueue_multi(self, rows: Sequence[dict[str, Any]]) -> None:
        # batchq's PostgreSQL enqueue_many: BEGIN; executemany(enqueue) (psycopg sends the
        # rows as one pipeline: one round trip, one INSERT statement per row); COMMIT.
        self.begin()
        self.cur.executemany(self.q["enqueue"], rows)
        self.commit()

    def enqueue_multi_row(self, rows: Sequence[dict[str, Any]]) -> None:
        """A reference, not batchq's path on PostgreSQL: ONE multi-row INSERT in autocommit
        (the enqueue VALUES row repeated, as batchq's MySQL enqueue_many sends)."""
        self.cur.execute(self.multi_sql(len(rows)), self.multi_params(rows))

    def claim_at(self, level: int, worker: str, token: str) -> tuple | None:
        # One statement: its own transaction in autocommit, or part of the open one (fused).
        params = {"queue": "default", "priority": level, "worker": worker, "token": token}
        self.cur.execute(self.q["claim"], params)
        return self.cur.fetchone()

    def ack(self, job_id: int, token: str) -> None:
        self.cur.execute(self.q["job_delete"], {"id": job_id, "token": token})

    def claim_batch_at(self, level: int, n: int, worker: str, token: str) -> list[tuple]:
        params = {"queue": "default", "priority": level, "worker": worker, "token": token, "limit": n}
        self.cur.execute(self.q["claim_batch"], params)
        return self.cur.fetchall()

    def ack_batch(self, ids: Sequence[int], token: str) -> None:
        # batchq binds the ids as a list (psycopg sends an array) for `id = ANY(%(ids)s)`.
        self.cur.execute(self.q["job_delete_batch"], {"ids": list(ids), "token": token})

    def execute(self, sql: str, params: Any = None) -> list[tuple]:
        self.cur.execute(sql, params)
        return list(self.cur.fetchall()) if self.cur.description else []


FLOORS: dict[str, type[Floor]] = {"mysql": MySQLFloor, "sqlite": SQLiteFloor, "postgresql": PostgreSQLFloor}


def floor_for(backend: str) -> Floor:
    return FLOORS[backend](url_for(backend))
