"""Job timeouts with real `batchq run` processes (issue 12): a job stuck where no signal reaches
ends its worker process within timeout + grace; its failure is recorded (or, when it cannot be,
gc-processing puts it back counted as an error); it runs again, then ends failed; nothing lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from batchq import Queue
from batchq.jobs.timeouts import RECORD_WAIT_SECONDS, WATCHDOG_EXIT_STATUS
from tests.support.cli import invoke_batchq
from tests.support.db import SERVER_URLS, app_connection, job_rows, ledger, run_query, run_query_on, sql
from tests.support.processes import APPS_DIR, assert_one_line_error, batchq_env, run_batchq, wait_for

pytestmark = pytest.mark.slow

MODULES = {"BATCHQ_TASK_MODULES": "jobs,timeout_jobs"}
STARTUP = 10.0  # a generous bound on a worker process's start and exit on a busy machine


@pytest.fixture
def tq(db_url: str) -> Iterator[Queue]:
    q = Queue(db_url, task_modules=["jobs", "timeout_jobs"])
    yield q
    q.close()


def run_worker(db_url: str, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = run_batchq(db_url, "run", *args, **MODULES)
    return result, time.monotonic() - started


def row(queue: Queue, job_id: int) -> dict[str, Any]:
    return next(r for r in job_rows(queue) if r["id"] == job_id)


def test_a_job_no_signal_stops_ends_the_worker_runs_again_then_fails(tq: Queue, db_url: str) -> None:
    stuck = tq.enqueue("timeout_jobs:blocked_declared", {"n": 1, "seconds": 120})  # 0.5s, 2 tries
    after = tq.enqueue("jobs:record", {"n": 2})

    # The heartbeat pings the worker's session meanwhile: the watchdog's record shares it.
    result, took = run_worker(db_url, "--timeout-grace", "1s", "--heartbeat", "0.1")
    assert result.returncode == WATCHDOG_EXIT_STATUS, result.stderr
    assert took < 0.5 + 1 + STARTUP
    assert "did not stop within the grace period (1s)" in result.stderr and "Traceback" not in result.stderr
    first = row(tq, stuck)
    assert (first["status"], first["error_count"], first["locked_by"]) == ("scheduled", 1, None)
    assert first["last_error"] == (
        "JobTimeout: timed out after 500ms; the worker process was ended (exit status 4) because the "
        "job did not stop within the grace period (1s): no signal could interrupt it (a blocking "
        "call, or signals blocked)"
    )
    assert row(tq, after)["status"] == "ready"  # never claimed: it waits for the next worker
    assert invoke_batchq(db_url, "gc-processing").returncode == 0  # nothing left claimed

    run_query(tq, "jobs_make_due")
    result, _ = run_worker(db_url, "--timeout-grace", "1s")
    assert result.returncode == WATCHDOG_EXIT_STATUS, result.stderr
    assert (row(tq, stuck)["status"], row(tq, stuck)["error_count"]) == ("failed", 2)

    result, _ = run_worker(db_url)
    assert (result.returncode, result.stderr) == (0, "")
    assert ledger(tq) == [1, 1, 2]  # once per try, the other job once
    assert [r["id"] for r in job_rows(tq)] == [stuck]


def test_the_watchdog_puts_back_the_rest_of_a_batch_and_deletes_the_done(tq: Queue, db_url: str) -> None:
    done = tq.enqueue("jobs:record", {"n": 1})
    stuck = tq.enqueue("timeout_jobs:blocked", {"n": 2, "seconds": 120}, timeout="300ms")
    rest = tq.enqueue("jobs:record", {"n": 3})

    result, _ = run_worker(db_url, "--batch", "3", "--timeout-grace", "500ms")
    assert result.returncode == WATCHDOG_EXIT_STATUS, result.stderr
    rows = {r["id"]: (r["status"], r["error_count"]) for r in job_rows(tq)}
    assert rows == {stuck: ("scheduled", 1), rest: ("ready", 0)}  # the done one deleted
    assert done not in rows and ledger(tq) == [1, 2]

    assert tq.cancel(stuck)
    result, _ = run_worker(db_url)
    assert result.returncode == 0, result.stderr
    assert ledger(tq) == [1, 2, 3] and job_rows(tq) == []


def test_a_failure_the_watchdog_cannot_record_is_left_to_gc_processing(
    tq: Queue, db_url: str, backend_name: str
) -> None:
    stuck = tq.enqueue("timeout_jobs:blocked", {"n": 1, "seconds": 120}, timeout="300ms", max_errors=3)
    worker = subprocess.Popen(
        [sys.executable, "-m", "batchq", "run", "--timeout-grace", "500ms"],
        env=batchq_env(db_url, **MODULES),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: ledger(tq) == [1])
    blocker = _lock_job(tq, db_url, backend_name, stuck)  # the watchdog's write must wait
    try:
        _, err = worker.communicate(timeout=0.3 + 0.5 + RECORD_WAIT_SECONDS + STARTUP)
    finally:
        blocker.rollback()
        blocker.close()
    assert worker.returncode == WATCHDOG_EXIT_STATUS, err
    assert "was not recorded in time; gc-processing will put it back" in err
    owner = row(tq, stuck)["locked_by"]
    assert row(tq, stuck)["status"] == "processing"
    wait_for(lambda: tq.backend.liveness.is_alive(owner) is not True, timeout=20)

    gc = invoke_batchq(db_url, "gc-processing")
    assert gc.returncode == 3 and f"#{stuck}" in gc.stdout, gc.stdout + gc.stderr
    swept = row(tq, stuck)
    assert (swept["status"], swept["error_count"]) == ("ready", 1)
    assert "died while running the job" in swept["last_error"]
    assert ledger(tq) == [1]


def _lock_job(queue: Queue, db_url: str, backend_name: str, job_id: int) -> Any:
    """A connection of the test's own holding a write lock on the job (SQLite: on the database)."""
    conn = app_connection(db_url if backend_name == "sqlite" else SERVER_URLS[backend_name])
    if backend_name == "sqlite":
        conn.isolation_level = None  # the transaction is job_row_lock's own BEGIN IMMEDIATE
    run_query_on(conn, backend_name, "job_row_lock", {"id": job_id})
    return conn


def _run_thread_worker(db_url: str, grace: str = "0.5") -> subprocess.CompletedProcess[str]:
    """A worker in a thread of its own (timeout 0.3s), until the queue is empty."""
    return subprocess.run(
        [sys.executable, str(APPS_DIR / "thread_worker.py"), "0.3", grace],
        env=batchq_env(db_url, **MODULES),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_worker_in_another_thread_stops_python_code_past_its_timeout(tq: Queue, db_url: str) -> None:
    spun = tq.enqueue("timeout_jobs:spin", {"n": 1})
    tq.enqueue("jobs:record", {"n": 2})
    # A long grace: the watchdog's thread was seen to wake up to 0.7s late beside a thread that
    # spins (the GIL), and then found the grace period over before it could raise anything.
    result = _run_thread_worker(db_url, grace="5")
    assert (result.returncode, result.stderr) == (0, "")
    assert ledger(tq) == [1, 2]
    assert row(tq, spun)["last_error"].startswith("JobTimeout: timed out after 300ms\n")


def test_a_worker_in_another_thread_is_ended_by_the_watchdog_in_a_blocking_call(
    tq: Queue, db_url: str
) -> None:
    stuck = tq.enqueue("timeout_jobs:sleep", {"n": 1, "seconds": 30})
    started = time.monotonic()
    result = _run_thread_worker(db_url)
    assert result.returncode == WATCHDOG_EXIT_STATUS, result.stderr
    assert time.monotonic() - started < 0.3 + 0.5 + STARTUP
    assert row(tq, stuck)["last_error"].endswith(
        "(500ms): it caught JobTimeout and went on, or a blocking call has not returned to see it"
    )


def test_run_timeout_from_the_command_line(tq: Queue, db_url: str) -> None:
    spun = tq.enqueue("timeout_jobs:spin", {"n": 1})
    tq.enqueue("jobs:record", {"n": 2})
    # 2s: the spinning job first records itself, and a first job's ledger write (its import and
    # connection) took over 300ms on a loaded machine, so the timeout cut it short.
    result, _ = run_worker(db_url, "--timeout", "2s")
    assert (result.returncode, result.stderr) == (0, "")
    assert ledger(tq) == [1, 2]
    assert row(tq, spun)["last_error"].startswith("JobTimeout: timed out after 2s\n")


def test_the_cli_refuses_bad_timeouts_in_one_line(tq: Queue, db_url: str) -> None:
    for args, needle in [
        (("enqueue", "jobs:noop", "--timeout", "0"), "bad --timeout value '0': a timeout is more than 0"),
        (("enqueue", "jobs:noop", "--timeout", "soon"), "bad --timeout value 'soon'"),
        (("enqueue", "jobs:noop", "--timeout", "-5s"), "bad --timeout value '-5s'"),
        (("run", "--timeout", "50000d"), "at most 100 years"),
        (("run", "--timeout-grace", "0"), "bad --timeout-grace value '0'"),
    ]:
        assert_one_line_error(invoke_batchq(db_url, *args), needle, status=2)
    assert job_rows(tq) == []
    result = invoke_batchq(db_url, "enqueue", "jobs:noop", "--timeout", "1h30m")
    assert result.returncode == 0, result.stderr
    assert [float(t) for (t,) in sql(tq, "SELECT timeout_seconds FROM batchq_job")] == [5400.0]


def running(pid: int) -> bool:
    """The process exists and is not a zombie."""
    if pid == 0:
        return False
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("stopped_by", ["JobTimeout", "watchdog"])
def test_a_timed_out_job_leaves_no_process_it_started(
    tq: Queue, db_url: str, tmp_path: Any, stopped_by: str
) -> None:
    """A task's `sleep 300`, and the one a shell it ran put in the background, outlived its
    timeout (and a retry started two more): they are killed with the job."""
    payload = {"folder": str(tmp_path), "blocked": stopped_by == "watchdog"}
    job = tq.enqueue("timeout_jobs:with_children", payload, timeout="1s", max_errors=1)
    try:
        # The worker's output pipes are inherited: a worker run waits for the children too.
        result, _ = run_worker(db_url, "--timeout-grace", "1s")
        assert result.returncode == (0 if stopped_by == "JobTimeout" else WATCHDOG_EXIT_STATUS), result.stderr
        assert "process(es) it had started" in result.stderr  # 3 with the shell still waiting
        assert "Traceback" not in result.stderr
        assert row(tq, job)["status"] == "failed"
        assert [name for name in ("child", "grandchild") if running(pid_in(tmp_path / name))] == []
    finally:
        for name in ("child", "grandchild"):
            if running(pid_in(tmp_path / name)):
                os.kill(pid_in(tmp_path / name), signal.SIGKILL)


def pid_in(path: Path) -> int:
    return int(path.read_text()) if path.exists() else 0
