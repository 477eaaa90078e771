"""Tasks of the dependency tests (issue 30, part 2). Importable as `dep_jobs`
(BATCHQ_TASK_MODULES=dep_jobs). Each run writes one row into test_dep_ledger: the job's number,
when it started and when it ended (this host's clock: every worker of a test runs here)."""

from __future__ import annotations

import os
import time
from typing import Any

from batchq import Queue
from batchq.backends import create_backend

LEDGER_CREATE = (
    "CREATE TABLE IF NOT EXISTS test_dep_ledger "
    "(n BIGINT NOT NULL, started DOUBLE PRECISION NOT NULL, ended DOUBLE PRECISION NOT NULL, "
    "total BIGINT NULL)"
)
_backends: dict[str, Any] = {}  # by URL: in-process tests change it between tests


def _write(n: int, started: float, total: int | None = None) -> None:
    url = os.environ["BATCHQ_URL"]
    if url not in _backends:
        _backends[url] = create_backend(url)
    _backend = _backends[url]
    mark = ":n, :s, :e, :t" if _backend.dialect == "sqlite" else "%(n)s, %(s)s, %(e)s, %(t)s"
    with _backend.errors():
        cur = _backend.conn.cursor()
        cur.execute(
            f"INSERT INTO test_dep_ledger (n, started, ended, total) VALUES ({mark})",
            {"n": n, "s": started, "e": time.time(), "t": total},
        )
        cur.close()
        _backend.conn.commit()


def step(payload: dict[str, Any]) -> int:
    """Record this run (after an optional sleep; then another: a window to crash the worker in
    after the run's effect), return the job's number."""
    started = time.time()
    time.sleep(payload.get("sleep", 0))
    _write(payload["n"], started)
    time.sleep(payload.get("sleep_after", 0))
    return int(payload["n"])


def fails(payload: dict[str, Any]) -> None:
    raise RuntimeError(f"step {payload['n']} broke")


def collect(payload: dict[str, Any]) -> int:
    """A group's callback: the sum of its members' results, read with Queue.result."""
    started = time.time()
    queue = Queue(os.environ["BATCHQ_URL"])
    try:
        total = sum(int(queue.result(member).value) for member in payload["members"])
    finally:
        queue.close()
    _write(payload["n"], started, total)
    return total
