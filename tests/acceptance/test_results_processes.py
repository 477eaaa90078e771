"""Job results (issue 30) with real `batchq` processes, on every backend: a worker SIGKILLed after
its task returned but before the claim that records the end commits (the job runs again, one
result is kept), and the `batchq result` command."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from batchq import Queue
from tests.acceptance.test_reliability import _kill_session_running, _lock_row
from tests.support.db import job_rows, ledger, sql
from tests.support.harness import sweep_after_crash, worker_name
from tests.support.processes import assert_one_line_error, run_batchq, start_batchq, wait_for

ENV = {"BATCHQ_TASK_MODULES": "jobs,result_jobs"}
# The statement of a worker's claim that records finished jobs it keeps, on each server.
KEEPING_CLAIM = {"mysql": ("REPLACE INTO batchq_history",), "postgresql": ("WITH done AS",)}


@pytest.fixture
def rq(db_url: str, queue: Queue) -> Iterator[Queue]:
    """A queue that may enqueue the results tasks, on the test database (its ledger emptied)."""
    q = Queue(db_url, task_modules=["jobs", "result_jobs"])
    yield q
    q.close()


def test_sigkill_after_the_task_returned_before_its_end_commits(rq: Queue, db_url: str) -> None:
    job = rq.enqueue("result_jobs:records_then_returns", {"n": 3, "sleep": 1.0}, keep_result=True)
    worker = start_batchq(db_url, "run", **ENV)
    wait_for(lambda: ledger(rq) == [3])  # its effect is written; it returns in a second
    blocker = _lock_row(rq, job)  # the claim that records its end must wait for this lock
    time.sleep(1.5)  # returned: the worker is inside that claim, waiting
    worker.kill()
    worker.wait()
    dialect = rq.backend.dialect
    if dialect != "sqlite":  # the server would finish the statement: end its session, as a crash does
        _kill_session_running(dialect, *KEEPING_CLAIM[dialect])
    blocker.rollback()
    blocker.close()
    assert sql(rq, "SELECT id FROM batchq_history") == []  # nothing of the end committed
    assert rq.result(job).status == "running"
    assert len(sweep_after_crash(rq, worker_name(worker.pid)).requeued) == 1
    assert rq.result(job).status == "waiting"
    ran = run_batchq(db_url, "run", **ENV)
    assert ran.returncode == 0, ran.stderr
    assert ledger(rq) == [3, 3]  # it ran again, as the crash came after its effect
    found = rq.result(job)
    assert (found.status, found.value, found.attempts) == ("succeeded", 30, 2)  # the crash counted
    assert [int(row[0]) for row in sql(rq, "SELECT id FROM batchq_history")] == [job]  # one result
    assert job_rows(rq) == []


def test_the_result_command(rq: Queue, db_url: str) -> None:
    ok = rq.enqueue("result_jobs:returns", {"total": 3, "note": "é"}, keep_result=True)
    bad = rq.enqueue("result_jobs:raises", "the disk is full", keep_result=True, max_errors=1)
    later = rq.enqueue("result_jobs:returns", 1, keep_result=True, delay="1h")
    plain = rq.enqueue("result_jobs:returns", 2)
    assert run_batchq(db_url, "run", **ENV).returncode == 0
    shown = run_batchq(db_url, "result", str(ok))
    assert (shown.returncode, shown.stdout, shown.stderr) == (0, '{"total": 3, "note": "é"}\n', "")
    as_json = run_batchq(db_url, "result", str(ok), "--json")
    data = json.loads(as_json.stdout)
    assert as_json.returncode == 0 and (data["status"], data["value"], data["attempts"]) == (
        "succeeded",
        {"total": 3, "note": "é"},
        1,
    )
    assert data["finished_at"].endswith("+00:00") and data["error"] is None
    failed = run_batchq(db_url, "result", str(bad))
    assert_one_line_error(failed, f"job {bad} failed after 1 try: builtins.ValueError: the disk is full")
    assert failed.stdout == ""
    failed_json = run_batchq(db_url, "result", str(bad), "--json")
    assert failed_json.returncode == 1
    assert json.loads(failed_json.stdout)["error"]["exception_class"] == "builtins.ValueError"
    started = time.monotonic()
    waiting = run_batchq(db_url, "result", str(later), "--wait", "0.5")
    assert time.monotonic() - started >= 0.5
    assert_one_line_error(waiting, f"job {later} is still waiting after waiting 0.5s")
    assert_one_line_error(run_batchq(db_url, "result", str(plain)), f"no result for job {plain}")
    assert_one_line_error(run_batchq(db_url, "result", "x"), "'x' is not a valid integer", status=2)
    assert_one_line_error(run_batchq(db_url, "result", "1", "--wait", "soon"), "bad duration", status=2)
    by_cli = run_batchq(db_url, "enqueue", "result_jobs:returns", '[1, "two"]', "--keep-result", "1h", **ENV)
    assert by_cli.returncode == 0, by_cli.stderr
    assert run_batchq(db_url, "run", **ENV).returncode == 0
    assert run_batchq(db_url, "result", by_cli.stdout.strip()).stdout == '[1, "two"]\n'
    bad_keep = run_batchq(db_url, "enqueue", "result_jobs:returns", "--keep-result", "0", **ENV)
    assert_one_line_error(bad_keep, "keep_result", status=2)
    sql(rq, f"UPDATE batchq_history SET expires_at = '2000-01-01 00:00:00' WHERE id = {int(ok)}")
    pruned = run_batchq(db_url, "prune")
    assert (pruned.returncode, pruned.stdout, pruned.stderr) == (0, "", "")  # quiet, for cron
    assert_one_line_error(run_batchq(db_url, "result", str(ok)), f"no result for job {ok}")
    assert sorted(int(row[0]) for row in sql(rq, "SELECT id FROM batchq_history")) == [
        bad,
        int(by_cli.stdout),
    ]
