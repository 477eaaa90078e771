"""The tasks bench/finish_tx.py drains: one row into bench_credit each, written on a connection
of the task's own (autocommit, then the job ends with the next claim) or on its job's
transaction (batchq.job_transaction: the job ends in it)."""

from __future__ import annotations

import os
from typing import Any

import batchq
from batchq.backends import Backend, create_backend

PLACEHOLDERS = {"sqlite": "?", "mysql": "%s", "postgresql": "%s"}
_own: Backend | None = None


def _insert(conn: Any, dialect: str, n: int) -> None:
    mark = PLACEHOLDERS[dialect]
    cur = conn.cursor()
    cur.execute(f"INSERT INTO bench_credit (n) VALUES ({mark})", (n,))
    cur.close()


def noop(payload: dict[str, Any]) -> None:
    """No write at all: what the claim and the finish cost alone."""


def plain(payload: dict[str, Any]) -> None:
    global _own
    if _own is None:
        _own = create_backend(os.environ["BATCHQ_URL"])
    _insert(_own.conn, _own.dialect, payload["n"])


@batchq.task(transactional=True)
def transactional(payload: dict[str, Any]) -> None:
    conn = batchq.job_transaction()
    module = type(conn).__module__
    dialect = (
        "sqlite"
        if module.startswith("sqlite3")
        else "postgresql"
        if module.startswith("psycopg")
        else "mysql"
    )
    _insert(conn, dialect, payload["n"])
