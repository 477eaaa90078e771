"""Several real worker processes at once, SIGKILL and SIGTERM: nothing lost, nothing run twice
unless a crash explains it."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from batchq import Queue
from tests.support.cli import invoke_batchq
from tests.support.db import job_rows, ledger
from tests.support.processes import run_batchq, start_batchq, wait_for

pytestmark = pytest.mark.slow


def test_four_workers_drain_2000_jobs_exactly_once(queue: Queue, db_url: str) -> None:
    queue.enqueue_many("jobs:record", [{"n": n} for n in range(2000)])
    workers = [start_batchq(db_url, "run", "--max-procs-per-host", "8") for _ in range(4)]
    for proc in workers:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert out == "" and err == ""  # quiet when all is well
    assert ledger(queue) == list(range(2000))  # every job once: no loss, no duplicate
    assert job_rows(queue) == []


def test_max_procs_per_host_lets_the_rest_exit_quietly(queue: Queue, db_url: str) -> None:
    queue.enqueue_many("jobs:record", [{"n": n, "sleep": 0.2} for n in range(6)])
    first = start_batchq(db_url, "run", "--max-procs-per-host", "1")
    wait_for(lambda: ledger(queue))
    late = run_batchq(db_url, "run", "--max-procs-per-host", "1")
    assert (late.returncode, late.stdout, late.stderr) == (0, "", "")
    assert first.wait(timeout=60) == 0
    assert ledger(queue) == list(range(6))


def test_sigkill_mid_job_then_gc_puts_it_back_at_once(queue: Queue, db_url: str, tmp_path: Path) -> None:
    started = tmp_path / "started"
    job_id = queue.enqueue("jobs:crash_once", {"n": 7, "started": str(started)})
    worker = start_batchq(db_url, "run")
    wait_for(started.exists)
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=10)
    [row] = job_rows(queue)
    assert row["status"] == "processing"
    # The server ends the dead worker's session (and its liveness lock) when it reads the closed socket.
    wait_for(lambda: queue.backend.liveness.is_alive(row["locked_by"]) is not True, timeout=10)

    swept = time.monotonic()
    gc = invoke_batchq(db_url, "gc-processing")
    assert gc.returncode == 3, gc.stderr
    assert f"#{job_id}" in gc.stdout and "is gone" in gc.stdout
    assert time.monotonic() - swept < 10  # no lease to wait out
    [row] = job_rows(queue)
    assert (row["status"], row["error_count"]) == ("ready", 1)

    rerun = run_batchq(db_url, "run")
    assert rerun.returncode == 0, rerun.stderr
    assert ledger(queue) == [7]  # completed exactly once; the first start was the crash
    assert job_rows(queue) == []
    assert invoke_batchq(db_url, "gc-processing").returncode == 0


def test_live_slow_worker_is_reported_not_requeued(queue: Queue, db_url: str, tmp_path: Path) -> None:
    started, done = tmp_path / "started", tmp_path / "done"
    queue.enqueue("jobs:slow", {"started": str(started), "done": str(done), "seconds": 3})
    worker = start_batchq(db_url, "run")
    wait_for(started.exists)
    gc = invoke_batchq(db_url, "gc-processing", "--older-than", "0s")
    assert gc.returncode == 3, gc.stderr
    assert "still running" in gc.stdout and "is alive" in gc.stdout
    assert job_rows(queue)[0]["status"] == "processing"
    assert invoke_batchq(db_url, "gc-processing").returncode == 0  # under the 1h default: quiet
    assert worker.wait(timeout=60) == 0
    assert done.exists() and job_rows(queue) == []


def test_sigterm_finishes_the_current_job_then_exits_0(queue: Queue, db_url: str, tmp_path: Path) -> None:
    first_started, first_done = tmp_path / "s1", tmp_path / "d1"
    queue.enqueue("jobs:slow", {"started": str(first_started), "done": str(first_done), "seconds": 1.5})
    queue.enqueue("jobs:slow", {"started": str(tmp_path / "s2"), "seconds": 0})
    worker = start_batchq(db_url, "run")
    wait_for(first_started.exists)
    worker.send_signal(signal.SIGTERM)
    out, err = worker.communicate(timeout=30)
    assert (worker.returncode, out, err) == (0, "", "")
    assert first_done.exists()  # the job at hand was finished
    rows = job_rows(queue)
    assert [row["status"] for row in rows] == ["ready"]  # the next one was left for later
