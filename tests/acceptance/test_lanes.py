"""`batchq run --concurrency N` (batchq.runtime.lanes): N jobs at once in one process, each with
every guarantee a single worker gives, on every backend; real processes, SIGTERM and SIGKILL."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from batchq import Queue
from tests.support.cli import invoke_batchq
from tests.support.db import job_rows, ledger, sql
from tests.support.processes import assert_one_line_error, run_batchq, start_batchq, wait_for

pytestmark = pytest.mark.slow

MODULES = {"BATCHQ_TASK_MODULES": "jobs,timeout_jobs"}


@pytest.fixture
def tq(db_url: str) -> Iterator[Queue]:
    """The queue, allowing the timeout tests' tasks too."""
    q = Queue(db_url, task_modules=["jobs", "timeout_jobs"])
    yield q
    q.close()


def gated(queue: Queue, count: int, gate: Path, first: int = 0) -> list[int]:
    """Jobs that write their number, then hold until ``gate`` exists."""
    return [queue.enqueue("jobs:record", {"n": n, "gate": str(gate)}) for n in range(first, first + count)]


def running(queue: Queue) -> list[dict]:
    return [row for row in job_rows(queue) if row["status"] == "processing"]


def pids(queue: Queue) -> set[int]:
    return {int(row[0]) for row in sql(queue, "SELECT pid FROM test_ledger")}


def test_lanes_run_jobs_at_once_in_one_process(queue: Queue, db_url: str, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gated(queue, 8, gate)
    worker = start_batchq(db_url, "-v", "run", "--concurrency", "4")
    wait_for(lambda: len(ledger(queue)) == 4)
    assert len(running(queue)) == 4  # four at once, each holding its claim
    assert len({row["locked_by"] for row in running(queue)}) == 1  # under the process's one name
    tokens = sql(queue, "SELECT DISTINCT claim_token FROM batchq_job WHERE status = 'processing'")
    assert len(tokens) == 4  # each its own claim
    gate.touch()
    out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    assert "processed 8 jobs (8 ok, 0 errors)" in err
    assert ledger(queue) == list(range(8))
    assert pids(queue) == {worker.pid}
    assert job_rows(queue) == []


def test_max_jobs_bounds_the_whole_process(queue: Queue, db_url: str) -> None:
    queue.enqueue_many("jobs:record", [{"n": n} for n in range(10)])
    result = run_batchq(db_url, "run", "--concurrency", "4", "--max-jobs", "6", "--batch", "3")
    assert (result.returncode, result.stderr) == (0, "")
    assert len(ledger(queue)) == 6
    assert [row["status"] for row in job_rows(queue)] == ["ready"] * 4


def test_sigterm_finishes_every_job_in_flight(queue: Queue, db_url: str, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gated(queue, 6, gate)
    worker = start_batchq(db_url, "-v", "run", "--concurrency", "3")
    wait_for(lambda: len(ledger(queue)) == 3)
    worker.send_signal(signal.SIGTERM)
    # The main thread runs the handler when it next gets the CPU; a lane whose job ended before
    # that claims again, as it should. The gate opens after it: on a loaded machine (CI's four
    # test processes on two cores) opening it at once let 1 or 2 more jobs in.
    time.sleep(1.0)
    gate.touch()
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert "processed 3 jobs (3 ok, 0 errors)" in err
    assert len(ledger(queue)) == 3  # the three in flight finished; no more were claimed
    assert sorted(row["status"] for row in job_rows(queue)) == ["ready"] * 3


def test_sigkill_s_jobs_come_back_through_gc_processing(queue: Queue, db_url: str, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gated(queue, 3, gate)
    worker = start_batchq(db_url, "run", "--concurrency", "3")
    wait_for(lambda: len(ledger(queue)) == 3)
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=10)
    [name] = {row["locked_by"] for row in running(queue)}
    wait_for(lambda: queue.backend.liveness.is_alive(name) is not True, timeout=10)
    gc = invoke_batchq(db_url, "gc-processing")
    assert gc.returncode == 3, gc.stderr
    assert sorted((row["status"], row["error_count"]) for row in job_rows(queue)) == [("ready", 1)] * 3
    gate.touch()
    assert run_batchq(db_url, "run", "--concurrency", "3").returncode == 0
    assert ledger(queue) == [0, 0, 1, 1, 2, 2]  # each ran twice: the kill landed mid-job
    assert job_rows(queue) == []


def test_a_timeout_stops_only_its_own_lane_s_job(tq: Queue, db_url: str, tmp_path: Path) -> None:
    queue = tq
    gate = tmp_path / "gate"
    spun = queue.enqueue("timeout_jobs:spin", {"n": 100}, timeout="0.5s", max_errors=1)
    gated(queue, 2, gate)
    worker = start_batchq(db_url, "-v", "run", "--concurrency", "3", **MODULES)
    wait_for(lambda: [row["status"] for row in job_rows(queue) if row["id"] == spun] == ["failed"])
    assert len(running(queue)) == 2  # the other lanes' jobs run on
    gate.touch()
    out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert "processed 3 jobs (2 ok, 1 error)" in err
    [row] = job_rows(queue)
    assert row["last_error"].startswith("JobTimeout: timed out after 500ms\n")


def test_a_job_past_its_grace_ends_the_process_and_the_lanes_jobs_go_back(
    tq: Queue, db_url: str, tmp_path: Path
) -> None:
    queue = tq
    gate = tmp_path / "gate"
    done = queue.enqueue("jobs:record", {"n": 1})
    stuck = queue.enqueue("timeout_jobs:blocked", {"n": 100, "seconds": 60}, timeout="0.5s", priority=1)
    others = gated(queue, 2, gate, first=10)
    result = run_batchq(db_url, "run", "--concurrency", "3", "--timeout-grace", "1s", timeout=60, **MODULES)
    assert result.returncode == 4, result.stderr
    rows = {row["id"]: row for row in job_rows(queue)}
    assert done not in rows  # finished before: deleted
    assert (rows[stuck]["status"], rows[stuck]["error_count"]) == ("scheduled", 1)  # its retry waits
    assert "did not stop within the grace period" in rows[stuck]["last_error"]
    # the other lanes' jobs were cut short by the exit: back, uncounted
    assert [(rows[i]["status"], rows[i]["error_count"]) for i in others] == [("ready", 0)] * 2


def test_concurrency_errors_are_usage_errors_before_anything_runs(queue: Queue, db_url: str) -> None:
    queue.enqueue("jobs:record", {"n": 1})
    result = run_batchq(db_url, "run", "--concurrency", "2", "--claim", "partition")
    assert_one_line_error(result, "--concurrency and --claim partition do not go together", status=2)
    result = run_batchq(db_url, "run", "--concurrency", "0")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--concurrency" in result.stderr
    assert ledger(queue) == []
