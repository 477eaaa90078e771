"""Transactional tasks (batchq.job_transaction): each writes its job's number into test_ledger on
its job's transaction, so the ledger row exists exactly when the job's end committed.
Workers import this module as `tx_jobs` (BATCHQ_TASK_MODULES=jobs,tx_jobs)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import batchq
from tests.support.queries import query

# In-process tests only: called before the task asks for its transaction, and between its
# write and its return (the job's commit).
before_ask: Callable[[], None] | None = None
after_write: Callable[[], None] | None = None


def dialect_of(conn: Any) -> str:
    module = type(conn).__module__
    if module.startswith("sqlite3"):
        return "sqlite"
    return "postgresql" if module.startswith("psycopg") else "mysql"


def write(n: int) -> Any:
    """The ledger row of job ``n``, on the job's transaction; returns the connection."""
    conn = batchq.job_transaction()
    cur = conn.cursor()
    cur.execute(query(dialect_of(conn), "ledger_insert"), {"n": n, "pid": os.getpid()})
    cur.close()
    return conn


@batchq.task(transactional=True)
def record(payload: dict[str, Any]) -> Any:
    """Write, then: pause while payload['hold'] (a file) does not exist, having touched
    payload['written'] (a SIGKILL lands between the write and the commit); sleep
    payload['sleep'] seconds; raise if payload['fail']; return payload['n']."""
    if before_ask is not None:
        before_ask()
    write(payload["n"])
    if after_write is not None:
        after_write()
    if payload.get("written"):
        Path(payload["written"]).write_text(str(os.getpid()))
    hold = Path(payload["hold"]) if payload.get("hold") else None
    deadline = time.monotonic() + 60
    while hold is not None and not hold.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    if payload.get("sleep"):
        time.sleep(payload["sleep"])
    if payload.get("fail"):
        raise ValueError(f"failed after writing {payload['n']}")
    return payload["n"]


@batchq.task(transactional=True)
def record_then_hang_once(payload: dict[str, Any]) -> None:
    """Write, then, on the first try only (payload['marker'] not yet there), touch the marker
    and hang: the test SIGKILLs the worker before its job's transaction commits."""
    write(payload["n"])
    marker = Path(payload["marker"])
    if not marker.exists():
        marker.write_text(str(os.getpid()))
        time.sleep(60)


@batchq.task(transactional=True)
def record_and_commit(payload: dict[str, Any]) -> None:
    """Ends its job's transaction itself: the job fails with TransactionEnded."""
    write(payload["n"]).commit()


@batchq.task(transactional=True)
def record_and_swallow_claim_lost(payload: dict[str, Any]) -> str:
    """Asks for its transaction after the test's hook took the job back, and catches ClaimLost."""
    if before_ask is not None:
        before_ask()
    try:
        write(payload["n"])
    except batchq.ClaimLost as exc:
        try:
            write(payload["n"])  # asked again: refused again, never autocommitted
        except batchq.ClaimLost:
            return str(exc)
    return "not lost"


def not_declared(payload: dict[str, Any]) -> None:
    """Asks for a job transaction without @task(transactional=True): ConfigError."""
    write(payload["n"])


@batchq.task(transactional=True)
def declared_but_unused(payload: dict[str, Any]) -> int:
    """Declared, never asks: finishes as any task does (with the next claim)."""
    return int(payload["n"])


# In-process tests only: the database record_and_follow's follow-up job goes to.
queue_url: str | None = None


@batchq.task(transactional=True)
def record_and_follow(payload: dict[str, Any]) -> None:
    """Write, and enqueue the next job in the same transaction (enqueue(conn=...)); then raise
    if payload['fail']."""
    conn = write(payload["n"])
    queue = batchq.Queue(queue_url, task_modules=["tx_jobs"])
    try:
        queue.enqueue("tx_jobs:record", {"n": payload["n"] + 1}, conn=conn)
    finally:
        queue.close()
    if payload.get("fail"):
        raise ValueError("failed after enqueueing")


@batchq.task(transactional=True)
def record_then_snooze(payload: dict[str, Any]) -> Any:
    """Report progress, write, then snooze for an hour: the write must not commit."""
    batchq.progress(0.5, "half")
    write(payload["n"])
    raise batchq.Snooze(3600)
