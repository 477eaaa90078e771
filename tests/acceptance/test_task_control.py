"""Control from inside a task (issue 30, part 3) with real `batchq run` processes, on every
backend: snoozes count no error and the job then succeeds (plain and --batch); Discard and
retry_on/discard_on fail for good with the reason; a worker SIGKILLed inside a snooze's finish
leaves its job to gc-processing, which puts it back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from batchq import Queue
from tests.support.db import SERVER_URLS, app_connection, autocommit_connection, run_query, run_query_on
from tests.support.harness import sweep_after_crash, worker_name
from tests.support.processes import run_batchq, start_batchq, wait_for

TASKS = "control_jobs"
ENV = {"BATCHQ_TASK_MODULES": TASKS}
SNOOZE_STATEMENT = "%snoozes = snoozes + 1%"  # job_snooze, as each server shows it running


@pytest.fixture
def q(db_url: str) -> Iterator[Queue]:
    queue = Queue(db_url, task_modules=[TASKS], secret=b"test-secret")
    yield queue
    queue.close()


@pytest.fixture
def calls(tmp_path: Path) -> str:
    folder = tmp_path / "calls"
    folder.mkdir()
    return str(folder)


def row_of(queue: Queue, job_id: int) -> tuple[str, int, int, str | None]:
    [(status, errors, snoozes, last_error, _class, _snoozed)] = run_query(
        queue, "job_control", {"id": job_id}
    )
    return status, int(errors), int(snoozes), last_error


def run(db_url: str, *args: str) -> str:
    done = run_batchq(db_url, "-v", "run", *args, **ENV)
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.mark.parametrize("batch", ["1", "4"])
def test_snoozes_count_no_error_then_the_job_succeeds(q: Queue, db_url: str, calls: str, batch: str) -> None:
    job_id = q.enqueue(
        TASKS + ":snooze_then_succeed", {"dir": calls, "times": 3, "seconds": 60}, keep_result=True
    )
    for snoozes in (1, 2, 3):
        log = run(db_url, "--batch", batch)
        assert "0 errors, 1 snoozed" in log
        assert row_of(q, job_id) == ("scheduled", 0, snoozes, None)  # no error, no last_error
        run_query(q, "jobs_make_due")
    run(db_url, "--batch", batch)
    result = q.result(job_id)
    assert (result.status, result.value, result.attempts) == ("succeeded", 4, 1)


def test_discard_and_retry_on_discard_on_fail_for_good_with_the_reason(q: Queue, db_url: str) -> None:
    discarded = q.enqueue(TASKS + ":discard", {"reason": "no such customer"}, max_errors=10)
    permanent = q.enqueue(
        TASKS + ":discard_on_permanent", {"kind": "permanent", "why": "gone"}, max_errors=10
    )
    transient = q.enqueue(
        TASKS + ":discard_on_permanent", {"kind": "transient", "why": "flaky"}, max_errors=10
    )
    other = q.enqueue(TASKS + ":retry_on_transient", {"kind": "other", "why": "bad input"}, max_errors=10)
    log = run(db_url, "--backoff", "60")
    assert "4 errors)" in log and "snoozed" not in log
    status, errors, _, error = row_of(q, discarded)
    assert (status, errors) == ("failed", 1) and error is not None
    assert error.startswith("Discard: no such customer\n")
    assert row_of(q, permanent)[:2] == ("failed", 1)
    assert row_of(q, transient)[:2] == ("scheduled", 1)  # retried, as before
    assert row_of(q, other)[:2] == ("failed", 1)
    listed = run_batchq(db_url, "gc-error", **ENV)
    assert "Discard: no such customer" in listed.stdout + listed.stderr
    assert "ValueError is not in the task's retry_on" in (row_of(q, other)[3] or "")


def test_a_worker_killed_inside_a_snoozes_finish_leaves_the_job_to_gc_processing(
    q: Queue, db_url: str, calls: str, tmp_path: Path
) -> None:
    started, go = tmp_path / "started", tmp_path / "go"
    payload = {"dir": calls, "started": str(started), "go": str(go)}
    job_id = q.enqueue(TASKS + ":snooze_once_then_signal", payload, keep_result=True)
    worker = start_batchq(db_url, "run", **ENV)
    wait_for(started.exists)
    blocker = _lock_row(q, job_id)  # the snooze's UPDATE waits for it (SQLite: the whole file)
    go.touch()
    dialect, session = q.backend.dialect, None
    if dialect == "sqlite":
        time.sleep(1.5)  # the task has raised: the worker waits in job_snooze for our lock
    else:
        session = _session_running(dialect, SNOOZE_STATEMENT)
    worker.kill()
    worker.wait()
    if dialect != "sqlite":
        # A server finishes a statement its client sent even after the client died, unless the
        # session dies too (as when the worker's host goes down): end it, as such a crash would.
        _end_session(dialect, session)
    blocker.rollback()
    blocker.close()
    assert row_of(q, job_id)[:3] == ("processing", 0, 0)  # the snooze never committed
    report = sweep_after_crash(q, worker_name(worker.pid))
    assert [job.id for job in report.requeued] == [job_id]
    assert row_of(q, job_id)[:3] == ("ready", 1, 0)  # the abandoned try counts, as any crash's
    run(db_url)
    assert q.result(job_id).value == "done"


def _lock_row(queue: Queue, job_id: int) -> Any:
    """A second connection holding a write lock that the worker's finish must wait for."""
    dialect = queue.backend.dialect
    conn = app_connection(str(queue.url) if dialect == "sqlite" else SERVER_URLS[dialect])
    if dialect == "sqlite":
        conn.isolation_level = None  # the transaction is job_row_lock's own BEGIN IMMEDIATE
    run_query_on(conn, dialect, "job_row_lock", {"id": job_id})
    return conn


def _session_running(dialect: str, pattern: str) -> Any:
    """The worker's session, blocked in a statement LIKE ``pattern`` (this database's only)."""
    monitor = autocommit_connection(SERVER_URLS[dialect])

    def blocked() -> Any:
        cur = run_query_on(monitor, dialect, "sessions_running", {"statement": pattern})
        row = cur.fetchone()
        cur.close()
        return row[0] if row else None

    try:
        return wait_for(blocked, timeout=30)
    finally:
        monitor.close()


def _end_session(dialect: str, session: Any) -> None:
    monitor = autocommit_connection(SERVER_URLS[dialect])
    try:
        run_query_on(monitor, dialect, "session_end", {"session": session}).close()
    finally:
        monitor.close()
