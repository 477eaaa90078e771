"""Control from inside a task (issue 30, part 3; batchq.jobs.control): Snooze, Discard and @task's
retry_on/discard_on/max_snoozes, on every backend, through batchq's own Worker (the claim, the
chain and the finishes of `batchq run`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from batchq import Queue
from batchq.jobs.calls import LAST_ERROR_MAX_CHARS
from batchq.runtime.sweeps import gc_error
from batchq.runtime.worker import RunOptions, RunSummary, Worker
from batchq.testing import drain, inline
from tests.support.db import run_query

TASKS = "control_jobs"


@pytest.fixture
def q(db_url: str) -> Any:
    queue = Queue(db_url, task_modules=[TASKS], secret=b"test-secret")
    yield queue
    queue.close()


@pytest.fixture
def calls(tmp_path: Path) -> str:
    """A folder where control_jobs counts a task's calls."""
    folder = tmp_path / "calls"
    folder.mkdir()
    return str(folder)


def control(queue: Queue, job_id: int) -> dict[str, Any]:
    [row] = run_query(queue, "job_control", {"id": job_id})
    status, errors, snoozes, last_error, error_class, snoozed = row
    return {
        "status": status,
        "errors": int(errors),
        "snoozes": int(snoozes),
        "last_error": last_error,
        "error_class": error_class,
        "snoozed": bool(snoozed),
    }


def run(queue: Queue, **options: Any) -> RunSummary:
    return Worker(queue, RunOptions(backoff_base=0, **options)).run()


def seconds_until_due(queue: Queue, job_id: int) -> float:
    return float(run_query(queue, "job_seconds_until_due", {"id": job_id})[0][0])


# -- Snooze ---------------------------------------------------------------------------------


def test_snoozes_count_no_error_and_the_job_then_succeeds(q: Queue, calls: str) -> None:
    job_id = q.enqueue(TASKS + ":snooze_then_succeed", {"dir": calls, "times": 3}, keep_result=True)
    summary = run(q)
    assert (summary.snoozed, summary.succeeded, summary.errors) == (3, 1, 0)
    result = q.result(job_id)
    assert (result.status, result.value, result.attempts) == ("succeeded", 4, 1)  # 3 snoozes, 1 try


def test_a_snoozed_job_waits_its_delay_uncounted_and_explain_says_why(q: Queue, calls: str) -> None:
    job_id = q.enqueue(TASKS + ":snooze_then_succeed", {"dir": calls, "times": 2, "seconds": 60})
    assert run(q).snoozed == 1
    row = control(q, job_id)
    assert row == {
        "status": "scheduled",
        "errors": 0,
        "snoozes": 1,
        "last_error": None,
        "error_class": None,
        "snoozed": True,
    }
    assert seconds_until_due(q, job_id) == pytest.approx(60, abs=5)
    explained = q.explain(job_id)
    assert (explained.state, explained.delay_reason, explained.snoozes) == ("delayed", "snooze", 1)
    assert "snoozed it (batchq.Snooze), 1 time so far" in explained.summary
    assert run(q).processed == 0  # not due: no worker runs it early
    run_query(q, "jobs_make_due")
    assert run(q).snoozed == 1
    assert control(q, job_id)["snoozes"] == 2 and control(q, job_id)["errors"] == 0
    run_query(q, "jobs_make_due")
    assert run(q).succeeded == 1
    assert q.explain(job_id).state == "unknown"  # done and deleted


def test_a_failure_after_a_snooze_is_a_backoff_in_explain(q: Queue, calls: str) -> None:
    job_id = q.enqueue(TASKS + ":snooze_then_succeed", {"dir": calls, "times": 1, "seconds": 60})
    run(q)
    run_query(q, "jobs_set_task", {"task": TASKS + ":discard_on_permanent"})  # now it raises Transient
    run_query(q, "jobs_set_payload", {"payload": b'{"kind": "transient", "why": "flaky"}'})
    run_query(q, "jobs_make_due")
    Worker(q, RunOptions(backoff_base=30)).run()
    explained = q.explain(job_id)
    assert (explained.delay_reason, explained.error_count, explained.snoozes) == ("backoff", 1, 1)
    assert "snoozed 1 time" in explained.details[0]


def test_a_task_cannot_swallow_a_snooze_with_except_exception(q: Queue, calls: str) -> None:
    job_id = q.enqueue(TASKS + ":snooze_in_try", {"dir": calls}, keep_result=True)
    run(q)
    assert q.result(job_id).value == "second call"


def test_an_async_task_snoozes(q: Queue, calls: str) -> None:
    job_id = q.enqueue(TASKS + ":snooze_async", {"dir": calls}, keep_result=True)
    summary = run(q)
    assert (summary.snoozed, q.result(job_id).value) == (1, 2)


def test_snoozing_past_max_snoozes_fails_for_good_and_a_requeue_starts_again(q: Queue) -> None:
    job_id = q.enqueue(TASKS + ":snooze_forever", max_errors=10)
    summary = run(q)
    assert (summary.snoozed, summary.errors) == (2, 1)
    row = control(q, job_id)
    assert (row["status"], row["errors"], row["snoozes"]) == ("failed", 1, 2)
    limit = f"SnoozeLimit: job {job_id} snoozed 2 times, the most its task allows"
    assert row["last_error"].startswith(limit)
    [_requeued] = gc_error(q, "requeue", ids=[job_id])
    assert control(q, job_id)["snoozes"] == 0  # a fresh set of snoozes with its fresh tries
    assert run(q).snoozed == 2


def test_max_jobs_bounds_a_worker_whose_job_snoozes_for_no_time(q: Queue, calls: str) -> None:
    q.enqueue(TASKS + ":snooze_then_succeed", {"dir": calls, "times": 100})
    summary = run(q, max_jobs=5)
    assert (summary.processed, summary.snoozed) == (5, 5)


@pytest.mark.parametrize("seconds", [-1, "nan", 10**12, "inf"])
def test_a_bad_snooze_fails_the_try_visibly(q: Queue, seconds: Any) -> None:
    job_id = q.enqueue(TASKS + ":snooze_for", {"seconds": seconds})
    summary = Worker(q, RunOptions(backoff_base=30)).run()
    assert (summary.errors, summary.snoozed) == (1, 0)
    row = control(q, job_id)
    assert (row["status"], row["errors"], row["snoozes"]) == ("scheduled", 1, 0)  # retried, counted
    assert row["last_error"].startswith("ConfigError: bad Snooze seconds")
    assert row["error_class"] == "batchq.errors.ConfigError"


def test_snooze_in_a_batch_is_finished_by_its_own_token(q: Queue, tmp_path: Path) -> None:
    """run --batch: snoozes are written at once, the successes ride with the next claim."""
    folders = [tmp_path / str(n) for n in range(6)]
    for folder in folders:
        folder.mkdir()
    ids = [
        q.enqueue(TASKS + ":snooze_then_succeed", {"dir": str(folder), "times": n % 2}, keep_result=True)
        for n, folder in enumerate(folders)
    ]
    summary = run(q, batch_size=4)
    assert (summary.snoozed, summary.succeeded, summary.errors, summary.stale_finishes) == (3, 6, 0, 0)
    assert [q.result(job_id).value for job_id in ids] == [1, 2, 1, 2, 1, 2]


# -- Discard, discard_on, retry_on ------------------------------------------------------------


def test_discard_fails_for_good_with_its_reason_and_its_dependants_fail(q: Queue) -> None:
    parent = q.enqueue(TASKS + ":chain_parent", max_errors=10, keep_result=True)
    child = q.enqueue(TASKS + ":chain_child", after=[parent])
    summary = run(q)
    assert (summary.errors, summary.succeeded) == (1, 0)
    row = control(q, parent)
    assert (row["status"], row["errors"], row["error_class"]) == ("failed", 1, "batchq.jobs.control.Discard")
    assert row["last_error"].startswith("Discard: the order was cancelled\n")
    result = q.result(parent)
    assert result.status == "failed" and result.error is not None
    error = result.error
    assert (error.exception_class, error.message) == (
        "batchq.jobs.control.Discard",
        "the order was cancelled",
    )
    child_row = control(q, child)
    assert child_row["status"] == "failed"
    assert child_row["last_error"] == f"DependencyFailed: parent job {parent} failed for good"


def test_a_discard_with_a_megabyte_reason_is_stored_cut(q: Queue) -> None:
    job_id = q.enqueue(TASKS + ":discard", {"reason": "x" * 1_000_000})
    run(q)
    row = control(q, job_id)
    assert row["status"] == "failed"
    assert row["last_error"] == "Discard: " + "x" * (LAST_ERROR_MAX_CHARS - len("Discard: "))


@pytest.mark.parametrize(
    ("task", "kind", "status", "why"),
    [
        ("discard_on_permanent", "permanent", "failed", "Permanent is in the task's discard_on"),
        ("discard_on_permanent", "transient", "scheduled", None),
        ("retry_on_transient", "transient", "scheduled", None),
        ("retry_on_transient", "other", "failed", "ValueError is not in the task's retry_on"),
    ],
)
def test_retry_on_and_discard_on(q: Queue, task: str, kind: str, status: str, why: str | None) -> None:
    job_id = q.enqueue(f"{TASKS}:{task}", {"kind": kind, "why": "boom"}, max_errors=10)
    Worker(q, RunOptions(backoff_base=30)).run()
    row = control(q, job_id)
    assert (row["status"], row["errors"]) == (status, 1)
    lines = row["last_error"].splitlines()
    assert lines[0].endswith(": boom")
    if why is None:
        assert "failed for good" not in row["last_error"]
    else:
        assert lines[1] == f"(failed for good: {why})"


def test_a_timeout_is_retried_whatever_retry_on_says(q: Queue) -> None:
    job_id = q.enqueue(TASKS + ":slow_with_retry_on", max_errors=10)
    summary = Worker(q, RunOptions(backoff_base=30)).run()
    assert summary.timed_out == 1
    row = control(q, job_id)
    assert (row["status"], row["errors"]) == ("scheduled", 1)
    assert row["error_class"] == "batchq.jobs.timeouts.JobTimeout"


# -- batchq.testing ---------------------------------------------------------------------------


def test_drain_notes_snoozes_and_failures_for_good(q: Queue, calls: str) -> None:
    snoozer = q.enqueue(TASKS + ":snooze_then_succeed", {"dir": calls, "times": 1, "seconds": 60})
    discarded = q.enqueue(TASKS + ":discard")
    outcomes = drain(q)
    noted = [(o.job_id, o.snoozed, o.failed) for o in outcomes]
    assert noted == [(snoozer, True, False), (discarded, False, True)]
    assert outcomes.snoozed[0].snoozed_for == 60
    outcomes.snoozed[0].raise_error()  # a snooze is no failure to raise
    assert control(q, snoozer)["snoozes"] == 1
    assert [o.value for o in drain(q, with_scheduled=True)] == [2]


def test_drain_tells_a_snooze_past_max_snoozes_as_the_failure_it_is(q: Queue) -> None:
    job_id = q.enqueue(TASKS + ":snooze_forever")
    outcomes = drain(q)
    assert [(o.snoozed, o.failed) for o in outcomes] == [(True, False), (True, False), (False, True)]
    assert (outcomes[2].error or "").startswith(f"SnoozeLimit: job {job_id} snoozed 2 times")
    assert control(q, job_id)["status"] == "failed"


def test_inline_notes_a_snooze_and_raises_a_discard(q: Queue, calls: str) -> None:
    from batchq import Discard

    with inline(q) as block:
        q.enqueue(TASKS + ":snooze_then_succeed", {"dir": calls, "times": 1, "seconds": 5})
        with pytest.raises(Discard, match="no such customer"):
            q.enqueue(TASKS + ":discard")
    snoozed, discarded = block.ran
    assert (snoozed.snoozed, snoozed.snoozed_for, snoozed.failed) == (True, 5, False)
    assert discarded.failed and discarded.error is not None and discarded.error.startswith("Discard:")
    assert math.isfinite(snoozed.snoozed_for or 0)
