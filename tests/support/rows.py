"""Job rows written with plain SQL, as anyone with write access to the tables could write them,
and payloads sized to the byte for the size checks."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from batchq import PayloadError, Queue
from batchq.stores.jobs import enqueue_statement
from tests.support.db import job_rows, run_query, run_query_on, sql
from tests.support.processes import run_batchq

# The largest error_count each table accepts: SMALLINT UNSIGNED; INTEGER CHECK 0..65535; INTEGER.
ERROR_COUNT_MAX = {"mysql": 65535, "postgresql": 65535, "sqlite": 2**63 - 1}
# The columns write_row sets, and their ordinary values. The row is due an hour ago, so it goes
# first in its queue (the claim orders by priority, run_at, id).
JOB_COLUMNS: dict[str, Any] = {
    "queue": "default",
    "task": "jobs:noop",
    "payload": None,
    "serializer": "json",
    "priority": 0,
    "status": "ready",
    "error_count": 0,
    "max_errors": 10,
    "locked_by": None,
    "claim_token": None,
    "claimed_an_hour_ago": False,  # processing_at: an hour ago, or NULL
}


def write_row(queue: Queue, /, **values: Any) -> int:
    """INSERT a job row by plain SQL (test query job_insert); returns its id."""
    if unknown := values.keys() - JOB_COLUMNS.keys():
        raise TypeError(f"write_row sets no column {sorted(unknown)}")
    run_query(queue, "job_insert", {**JOB_COLUMNS, **values})
    [(job_id,)] = sql(queue, "SELECT MAX(id) FROM batchq_job")
    return int(job_id)


def insert_row(queue: Queue, task_name: str, payload: Any, max_errors: int = 1) -> None:
    """A JSON job row due now, written with plain SQL (test query job_insert_due_now)."""
    data = None if payload is None else json.dumps(payload).encode()
    run_query(queue, "job_insert_due_now", {"task": task_name, "payload": data, "max_errors": max_errors})


def rows_by_task(queue: Queue) -> dict[str, dict[str, Any]]:
    return {row["task"]: row for row in job_rows(queue)}


def processing(queue: Queue, owner: str | None, **values: Any) -> dict[str, Any]:
    """The columns of a row claimed an hour ago by ``owner``."""
    return {
        "status": "processing",
        "locked_by": owner,
        "claim_token": "t" * 32,
        "claimed_an_hour_ago": True,
        **values,
    }


def dead_worker() -> str:
    """A worker name of this host whose process has exited (and holds no liveness lock)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return f"{socket.gethostname()}:{proc.pid}"


def good_job(queue: Queue, tmp_path: Path) -> tuple[int, Path]:
    marker = tmp_path / "good-job-ran"
    return queue.enqueue("jobs:touch", str(marker)), marker


def row(queue: Queue, job_id: int) -> dict[str, Any]:
    [found] = [r for r in job_rows(queue) if r["id"] == job_id]
    return found


def run_then_sweep(
    db_url: str, *run_args: str
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """`batchq run` (with ``run_args``), then `batchq gc-processing`, as cron would."""
    return run_batchq(db_url, "run", *run_args), run_batchq(db_url, "gc-processing")


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr, result.stderr


def app_write(app: Any, n: int) -> None:
    """An earlier write of the application's transaction."""
    dialect = "sqlite" if type(app).__module__.startswith("sqlite3") else None
    if dialect is None:
        dialect = "mysql" if type(app).__module__.startswith("pymysql") else "postgresql"
    run_query_on(app, dialect, "ledger_insert", {"n": n, "pid": n}).close()


def json_string_of(size: int) -> str:
    """A payload whose JSON encoding is exactly ``size`` bytes."""
    return "x" * (size - 2)


def enqueue_size_fits(queue: Queue, size: int) -> bool:
    """Does batchq's size check let a payload of ``size`` JSON bytes through? Writes nothing."""
    template = queue.builder.template(queue.builder.spec("jobs:noop", max_errors=10))
    try:
        row = queue.builder.row(template, json_string_of(size))
        queue.backend.check_statement_sizes(enqueue_statement("enqueue", row), [row])
    except PayloadError:
        return False
    return True


def fill_backlog(queue: Queue) -> None:
    """5,000 due and 5,000 future-dated jobs, then fresh planner statistics."""
    for start in range(0, 5000, 1000):
        queue.enqueue_many("jobs:noop", list(range(start, start + 1000)))
        queue.enqueue_many("jobs:noop", list(range(start, start + 1000)), delay=3600)
    run_query(queue, "analyze_jobs")  # (MySQL answers ANALYZE TABLE with rows: read and dropped)
