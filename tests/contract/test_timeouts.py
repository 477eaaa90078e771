"""Job timeouts (issue 12), in the worker's own process on every backend: a job past its timeout
is stopped by JobTimeout, counted as a failure, and the worker goes on. Jobs stuck where no
signal reaches end the worker process: tests/acceptance/test_timeouts.py."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

import batchq
from batchq import ConfigError, Queue
from batchq.core.failures import timeout_fingerprint
from batchq.runtime.sweeps import failure_groups
from batchq.runtime.worker import RunOptions, RunSummary, Worker
from tests.support.db import job_rows, sql

SPIN = "timeout_jobs:spin"


@pytest.fixture
def tq(db_url: str) -> Iterator[Queue]:
    q = Queue(db_url, task_modules=["jobs", "timeout_jobs"])
    yield q
    q.close()


def run(queue: Queue, **options: Any) -> RunSummary:
    return Worker(queue, RunOptions(**options)).run()


def last_errors(queue: Queue) -> dict[int, str]:
    return {row["id"]: row["last_error"] for row in job_rows(queue)}


def test_a_python_loop_past_its_timeout_fails_and_the_next_job_runs(tq: Queue) -> None:
    stuck = tq.enqueue(SPIN, {}, timeout="300ms")
    after = tq.enqueue("jobs:echo", "next")
    summary = run(tq)
    assert (summary.succeeded, summary.errors, summary.timed_out) == (1, 1, 1)
    assert list(summary.job_ids) == [stuck, after]
    [row] = job_rows(tq)
    assert (row["id"], row["status"], row["error_count"]) == (stuck, "scheduled", 1)
    assert row["last_error"].startswith("JobTimeout: timed out after 300ms\n")
    assert "in spin" in row["last_error"]  # where it was stopped
    [(fingerprint,)] = sql(tq, f"SELECT error_fingerprint FROM batchq_job WHERE id = {stuck}")
    assert fingerprint == timeout_fingerprint(SPIN)


@pytest.mark.parametrize(
    "task",
    ["timeout_jobs:sleep", "timeout_jobs:async_sleep", "timeout_jobs:async_spin"],
)
def test_interruptible_calls_and_async_tasks_are_stopped(tq: Queue, task: str) -> None:
    tq.enqueue(task, {"seconds": 60}, timeout=0.3)
    tq.enqueue("timeout_jobs:async_sleep", {"seconds": 0})  # an event loop of its own runs it
    started = time.monotonic()
    summary = run(tq)
    assert time.monotonic() - started < 30  # stopped, not slept through
    assert (summary.succeeded, summary.timed_out) == (1, 1)
    [error] = last_errors(tq).values()
    assert error.startswith("JobTimeout: timed out after 300ms\n")


def test_precedence_enqueue_over_task_over_run(tq: Queue) -> None:
    own = tq.enqueue("timeout_jobs:spin_declared", {}, timeout=timedelta(milliseconds=200))
    declared = tq.enqueue("timeout_jobs:spin_declared", {})  # @task(timeout="0.5s")
    by_run = tq.enqueue(SPIN, {})
    summary = run(tq, timeout=0.3)
    assert summary.timed_out == 3
    errors = {job_id: text.split("\n", 1)[0] for job_id, text in last_errors(tq).items()}
    assert errors == {
        own: "JobTimeout: timed out after 200ms",
        declared: "JobTimeout: timed out after 500ms",
        by_run: "JobTimeout: timed out after 300ms",
    }


def test_no_timeout_anywhere_lets_a_job_run_and_a_timeout_stays_with_its_job(tq: Queue) -> None:
    tq.enqueue("jobs:noop", timeout=0.2)  # done well within it
    tq.enqueue("timeout_jobs:sleep", {"seconds": 0.5})  # longer than the job before's timeout
    tq.enqueue("timeout_jobs:sleep", {"seconds": 0.5}, timeout="1m")
    summary = run(tq)
    assert (summary.succeeded, summary.errors) == (3, 0)
    assert job_rows(tq) == []


def test_in_batch_mode_the_timeout_is_per_job(tq: Queue) -> None:
    first = tq.enqueue(SPIN, {}, timeout=0.3)
    tq.enqueue("timeout_jobs:sleep", {"seconds": 0.2}, timeout=0.5)  # 0.2s of its own 0.5s
    third = tq.enqueue(SPIN, {}, timeout=0.3)
    summary = run(tq, batch_size=3)
    assert (summary.succeeded, summary.timed_out) == (1, 2)
    assert [(row["id"], row["status"]) for row in job_rows(tq)] == [
        (first, "scheduled"),
        (third, "scheduled"),
    ]


def test_a_task_that_catches_jobtimeout_still_timed_out(tq: Queue) -> None:
    tq.enqueue("timeout_jobs:catch_and_return", {}, timeout=0.2)
    summary = run(tq)
    assert (summary.succeeded, summary.timed_out) == (0, 1)
    [error] = last_errors(tq).values()
    assert error == "JobTimeout: timed out after 200ms; the task went on past it, then returned"


def test_timed_out_jobs_end_failed_and_group_together(tq: Queue) -> None:
    spun = [tq.enqueue(SPIN, {}, timeout=0.2, max_errors=1) for _ in range(2)]
    tq.enqueue("jobs:fail", max_errors=1)
    run(tq)
    assert {row["status"] for row in job_rows(tq)} == {"failed"}
    groups = failure_groups(tq)
    timed = next(group for group in groups if group.fingerprint == timeout_fingerprint(SPIN))
    assert sorted(timed.job_ids) == spun and timed.sample == "JobTimeout: timed out after 200ms"
    assert len(groups) == 2  # jobs:fail is a group of its own


@pytest.mark.parametrize(
    ("timeout", "message"),
    [
        (0, "a timeout is more than 0 seconds"),
        ("0s", "a timeout is more than 0 seconds"),
        (-1, "0 or more"),
        ("soon", "bad timeout 'soon'"),
        (True, "bad timeout True"),
        (10**20, "at most 100 years"),
        (float("nan"), "bad timeout nan"),
    ],
)
def test_bad_timeouts_are_refused_before_anything_is_written(tq: Queue, timeout: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        tq.enqueue("jobs:noop", timeout=timeout)
    with pytest.raises(ConfigError, match=message):
        tq.enqueue_many("jobs:noop", [1, 2], timeout=timeout)
    with pytest.raises(ConfigError, match=message):
        batchq.task(timeout=timeout)
    with pytest.raises(ConfigError):
        Worker(tq, RunOptions(timeout=timeout))
    with pytest.raises(ConfigError):
        Worker(tq, RunOptions(timeout_grace=timeout))
    assert job_rows(tq) == []


def test_a_stored_timeout_is_read_back(tq: Queue) -> None:
    tq.enqueue("jobs:noop", timeout="1h30m")
    tq.enqueue("jobs:noop")
    tq.enqueue_many("jobs:noop", [1, 2], timeout=0.25)
    stored = [
        None if t is None else float(t)
        for (t,) in sql(tq, "SELECT timeout_seconds FROM batchq_job ORDER BY id")
    ]
    assert stored == [5400.0, None, 0.25, 0.25]


@pytest.mark.parametrize("stored", ["0", "-5", "1e300"])
def test_an_odd_timeout_written_by_hand_falls_back_to_the_next_default(tq: Queue, stored: str) -> None:
    job_id = tq.enqueue(SPIN, {})
    sql(tq, f"UPDATE batchq_job SET timeout_seconds = {stored} WHERE id = {job_id}")
    run(tq, timeout=0.2)
    assert last_errors(tq)[job_id].startswith("JobTimeout: timed out after 200ms\n")


@pytest.mark.backends("sqlite")
def test_a_timeout_that_is_no_number_falls_back_too(tq: Queue) -> None:
    job_id = tq.enqueue(SPIN, {})
    sql(tq, f"UPDATE batchq_job SET timeout_seconds = 'soon' WHERE id = {job_id}")
    run(tq, timeout=0.2)
    assert last_errors(tq)[job_id].startswith("JobTimeout: timed out after 200ms\n")


def test_sigalrm_is_left_alone_until_a_job_has_a_timeout_and_restored_after(tq: Queue) -> None:
    def app_handler(signum: int, frame: Any) -> None:
        pass

    previous = signal.signal(signal.SIGALRM, app_handler)
    try:
        tq.enqueue("timeout_jobs:alarm_handler_is", "app_handler")  # no timeout: the app's handler
        assert run(tq).succeeded == 1
        tq.enqueue("timeout_jobs:alarm_handler_is", "_on_alarm", timeout="1m")
        tq.enqueue("timeout_jobs:alarm_handler_is", "_on_alarm")  # and on till the run ends
        assert run(tq).succeeded == 2
        assert signal.getsignal(signal.SIGALRM) is app_handler
    finally:
        signal.signal(signal.SIGALRM, previous)
