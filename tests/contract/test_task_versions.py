"""Task versions (issue 12): a job stores its task's version at enqueue; a worker upgrades an
older payload before the call, and puts back one newer than it knows, uncounted, for a worker
that knows it. And a per-enqueue backoff, over the task's, over `run --backoff`.

An old worker is this process with greet's declaration turned back (``deployed``), as the code
of an earlier deploy would declare it; tests/acceptance/test_task_versions.py runs two real ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import versioned_jobs

from batchq import ConfigError, Queue
from batchq.runtime.worker import VERSION_WAIT_MAX_SECONDS, VERSION_WAIT_MIN_SECONDS, RunOptions, Worker
from tests.support.db import job_rows, run_query

GREET = "versioned_jobs:greet"


@pytest.fixture
def vqueue(db_url: str) -> Iterator[Queue]:
    q = Queue(db_url, task_modules=["jobs", "versioned_jobs"], secret=b"test-secret")
    versioned_jobs.RECEIVED.clear()
    yield q
    q.close()


@pytest.fixture
def deployed(monkeypatch: pytest.MonkeyPatch) -> Any:
    """deployed(n): from now on (until the test ends) this process runs version n of greet."""

    def deploy(version: int) -> None:
        monkeypatch.setattr(versioned_jobs.greet, "batchq_version", version)
        monkeypatch.setattr(versioned_jobs.greet, "batchq_upgrade", versioned_jobs.steps_below(version))

    return deploy


def columns(queue: Queue, job_id: int) -> tuple[Any, ...]:
    """(task_version, backoff, version_wait) of a job."""
    [row] = run_query(queue, "job_version_columns", {"id": job_id})
    return tuple(row)


def run(queue: Queue, **options: Any) -> Any:
    return Worker(queue, RunOptions(**options)).run()


def seconds_until_due(queue: Queue, job_id: int) -> float:
    [(seconds,)] = run_query(queue, "job_seconds_until_due", {"id": job_id})
    return float(seconds)


# -- upgrades ------------------------------------------------------------------------------


def test_an_old_payload_is_upgraded_through_every_step_before_the_call(vqueue: Queue, deployed: Any) -> None:
    deployed(1)
    v1 = vqueue.enqueue(GREET, {"user": "ann", "n": 1})
    deployed(2)
    v2 = vqueue.enqueue(GREET, {"name": "bo", "n": 2})
    assert [columns(vqueue, v1)[0], columns(vqueue, v2)[0]] == [1, 2]
    deployed(3)
    summary = run(vqueue)
    assert (summary.succeeded, summary.errors, list(summary.job_ids)) == (2, 0, [v1, v2])
    assert versioned_jobs.RECEIVED == [
        {"n": 1, "name": "ann", "lang": "en"},  # 1 -> 2 -> 3
        {"n": 2, "name": "bo", "lang": "en"},  # 2 -> 3
    ]


def test_a_current_payload_is_passed_untouched(vqueue: Queue) -> None:
    job_id = vqueue.enqueue(GREET, {"name": "cy", "lang": "fr"})
    assert columns(vqueue, job_id) == (3, None, None)
    run(vqueue)
    assert versioned_jobs.RECEIVED == [{"name": "cy", "lang": "fr"}]  # no step ran: still "fr"


def test_a_row_without_a_version_is_version_1(vqueue: Queue) -> None:
    """Written by plain SQL, or enqueued before schema 013: task_version NULL."""
    payload = json.dumps({"user": "dee", "n": 4}).encode()
    run_query(vqueue, "job_insert_due_now", {"task": GREET, "payload": payload, "max_errors": 3})
    [row] = job_rows(vqueue)
    assert columns(vqueue, row["id"])[0] is None
    assert run(vqueue).succeeded == 1
    assert versioned_jobs.RECEIVED == [{"n": 4, "name": "dee", "lang": "en"}]


def test_a_pickle_payload_is_upgraded_after_unpickling(vqueue: Queue, deployed: Any) -> None:
    deployed(1)
    vqueue.enqueue(GREET, {"user": "eve", "seen": {1, 2}}, serializer="pickle")
    deployed(3)
    assert run(vqueue).succeeded == 1
    [received] = versioned_jobs.RECEIVED
    assert received == {"seen": {1, 2}, "name": "eve", "lang": "en"}


def test_an_upgrade_that_raises_fails_the_job_counted_naming_the_step(vqueue: Queue, deployed: Any) -> None:
    deployed(1)
    job_id = vqueue.enqueue(GREET, {"n": 5}, max_errors=2)  # no "user": from_v1 raises KeyError
    deployed(3)
    summary = run(vqueue, backoff_base=0)
    assert (summary.succeeded, summary.errors) == (0, 2)  # retried as any failure, then failed
    [row] = job_rows(vqueue)
    assert (row["id"], row["status"], row["error_count"]) == (job_id, "failed", 2)
    first_line = row["last_error"].splitlines()[0]
    assert first_line == "upgrading the payload from version 1 to 2 (from_v1) failed: KeyError: 'user'"
    assert "from_v1" in row["last_error"] and versioned_jobs.RECEIVED == []
    assert "from version 1 to 2" in vqueue.explain(job_id).details[2]


def test_enqueue_many_stores_the_version_and_the_backoff(vqueue: Queue) -> None:
    payloads = [{"name": "a", "lang": "en"}, {"name": "b", "lang": "en"}]
    assert vqueue.enqueue_many(GREET, payloads, backoff=7) == 2
    assert [columns(vqueue, row["id"]) for row in job_rows(vqueue)] == [(3, 7.0, None), (3, 7.0, None)]


# -- a newer version than the worker knows ---------------------------------------------------


def test_a_newer_version_is_put_back_uncounted_then_run_by_a_worker_that_knows_it(
    vqueue: Queue, deployed: Any
) -> None:
    job_id = vqueue.enqueue(GREET, {"name": "fay", "lang": "de"})  # by the new code: version 3
    deployed(2)  # an old worker
    old = Worker(vqueue, RunOptions())
    summary = old.run()
    assert (summary.processed, summary.version_waits, list(summary.job_ids)) == (0, 1, [])
    [row] = job_rows(vqueue)
    assert (row["status"], row["error_count"], row["last_error"]) == ("scheduled", 0, None)
    assert row["locked_by"] is None
    assert columns(vqueue, job_id) == (3, None, f"worker {old.name} knows version 2")
    assert VERSION_WAIT_MIN_SECONDS - 1 < seconds_until_due(vqueue, job_id) <= VERSION_WAIT_MIN_SECONDS * 1.5

    # No spin: the old worker does not claim it again before its time.
    assert run(vqueue).version_waits == 0 and versioned_jobs.RECEIVED == []

    seen = vqueue.explain(job_id)
    assert (seen.state, seen.delay_reason, seen.task_version) == ("delayed", "version", 3)
    assert seen.summary.startswith(
        f"job {job_id}: waiting for a worker that knows version 3 of task {GREET}; "
        f"worker {old.name} knows version 2"
    )
    assert "(version 3)" in seen.details[0] and "deploy" in seen.details[2]
    [stats] = vqueue.stats()
    assert (stats.waiting_for_version, stats.delayed, stats.failed) == (1, 1, 0)

    run_query(vqueue, "jobs_make_due")
    assert vqueue.explain(job_id).state == "waiting"  # due again: the next worker to claim decides
    deployed(3)  # a worker with the new code
    summary = run(vqueue)
    assert (summary.succeeded, summary.version_waits, list(summary.job_ids)) == (1, 0, [job_id])
    assert versioned_jobs.RECEIVED == [{"name": "fay", "lang": "de"}] and job_rows(vqueue) == []


def test_a_waiting_job_then_claimed_by_a_new_worker_is_counted_as_usual_when_it_fails(
    vqueue: Queue, deployed: Any
) -> None:
    """The claim clears the note: explain tells the later failure, not the old wait."""
    job_id = vqueue.enqueue(GREET, {"name": "gus"})  # no "lang": version 3 of greet refuses it
    deployed(2)
    run(vqueue)
    run_query(vqueue, "jobs_make_due")
    deployed(3)
    assert run(vqueue, backoff_base=60).errors == 1
    assert columns(vqueue, job_id) == (3, None, None)
    seen = vqueue.explain(job_id)
    assert (seen.state, seen.delay_reason, seen.error_count) == ("delayed", "backoff", 1)


def test_an_old_job_waits_longer_between_outdated_workers(vqueue: Queue, deployed: Any) -> None:
    job_id = vqueue.enqueue(GREET, {"name": "hal", "lang": "en"})
    run_query(vqueue, "job_make_old", {"id": job_id})  # a tenth of an hour is over the cap
    deployed(2)
    run(vqueue)
    assert VERSION_WAIT_MAX_SECONDS - 2 < seconds_until_due(vqueue, job_id) <= VERSION_WAIT_MAX_SECONDS * 1.5


def test_a_waiting_job_with_a_concurrency_key_gives_its_slot_back(vqueue: Queue, deployed: Any) -> None:
    newer = vqueue.enqueue(GREET, {"name": "ida", "lang": "en"}, concurrency_key="k")
    run_query(vqueue, "job_make_old", {"id": newer})  # put back, it waits a minute: out of the way
    deployed(2)
    later = vqueue.enqueue(GREET, {"name": "jo"}, concurrency_key="k")  # version 2: this worker's own
    summary = run(vqueue)
    assert (summary.version_waits, summary.succeeded, list(summary.job_ids)) == (1, 1, [later])
    assert [(row["id"], row["status"]) for row in job_rows(vqueue)] == [(newer, "blocked")]
    assert vqueue.explain(newer).delay_reason == "version"


def test_a_handler_without_a_version_takes_every_payload_as_stored(vqueue: Queue, deployed: Any) -> None:
    """`run --handler` calls one function for every job, whatever its task: versions are the
    task's, so they apply only to a handler that declares one itself."""
    deployed(1)
    vqueue.enqueue(GREET, {"user": "lou"})
    deployed(3)
    vqueue.enqueue(GREET, {"name": "max", "lang": "en"})
    assert run(vqueue, handler=versioned_jobs.plain_handler).succeeded == 2
    assert versioned_jobs.RECEIVED == [
        ("handler", {"user": "lou"}),
        ("handler", {"name": "max", "lang": "en"}),
    ]

    deployed(1)
    vqueue.enqueue(GREET, {"user": "ned"})
    deployed(2)
    newer = vqueue.enqueue(GREET, {"name": "ole"})  # version 2, but the handler below knows 1
    deployed(1)
    summary = run(vqueue, handler=versioned_jobs.greet)
    assert (summary.succeeded, summary.version_waits, [row["id"] for row in job_rows(vqueue)]) == (
        1,
        1,
        [newer],
    )


@pytest.mark.backends("mysql", "sqlite")  # PostgreSQL's CHECK keeps task_version from 1 to 65535
def test_a_hand_written_version_that_is_no_version_fails_the_job_with_the_reason(vqueue: Queue) -> None:
    job_id = vqueue.enqueue(GREET, {"name": "kim", "lang": "en"}, max_errors=1)
    run_query(vqueue, "job_set_task_version", {"id": job_id, "version": 0})
    assert run(vqueue).errors == 1
    [row] = job_rows(vqueue)
    assert row["status"] == "failed"
    assert row["last_error"].startswith("PayloadError: the job's stored task_version 0 is not a version")


def test_a_version_out_of_the_columns_range_is_refused_before_anything_is_written(
    vqueue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Set by hand on the function (@task(version=...) refuses it already).
    monkeypatch.setattr(versioned_jobs.greet, "batchq_version", 65536)
    with pytest.raises(ConfigError, match=r"'versioned_jobs:greet' declares version 65536: .*1 to 65535"):
        vqueue.enqueue(GREET, {"name": "kim", "lang": "en"})
    with pytest.raises(ConfigError, match="declares version 65536"):
        vqueue.enqueue_many(GREET, [{"name": "kim", "lang": "en"}])
    assert job_rows(vqueue) == []


@pytest.mark.backends("sqlite")  # the servers' columns refuse 65536 (SMALLINT UNSIGNED; CHECK)
def test_a_hand_written_version_above_the_range_fails_the_job_rather_than_wait(vqueue: Queue) -> None:
    job_id = vqueue.enqueue(GREET, {"name": "kim", "lang": "en"}, max_errors=1)
    run_query(vqueue, "job_set_task_version", {"id": job_id, "version": 65536})
    summary = run(vqueue)
    assert (summary.errors, summary.version_waits) == (1, 0)
    [row] = job_rows(vqueue)
    assert row["status"] == "failed"
    assert row["last_error"].startswith(
        "PayloadError: the job's stored task_version 65536 is not a version (a whole number from 1 to 65535)"
    )


# -- backoff: enqueue's, over the task's, over the run's ---------------------------------------


@pytest.mark.parametrize(
    ("task", "backoff", "run_backoff", "expected"),
    [
        ("jobs:fail_with_policy", "5m", 0, 300),  # enqueue's over the task's minute
        ("jobs:fail_with_policy", None, 7, 60),  # the task's over the run's
        ("jobs:fail", 30, 7, 30),  # enqueue's over the run's
        ("jobs:fail", None, 7, 7),  # the run's
    ],
)
def test_backoff_precedence(
    vqueue: Queue, task: str, backoff: Any, run_backoff: float, expected: float
) -> None:
    job_id = vqueue.enqueue(task, backoff=backoff, max_errors=5)
    assert columns(vqueue, job_id)[1] == (None if backoff is None else float(expected))
    run(vqueue, backoff_base=run_backoff)
    assert seconds_until_due(vqueue, job_id) == pytest.approx(expected, abs=2)
    run_query(vqueue, "jobs_make_due")
    run(vqueue, backoff_base=run_backoff)  # the second failure: the base doubled
    assert seconds_until_due(vqueue, job_id) == pytest.approx(2 * expected, abs=2)


def test_a_zero_backoff_from_enqueue_retries_at_once(vqueue: Queue) -> None:
    vqueue.enqueue("jobs:fail_with_policy", backoff=0)
    assert run(vqueue, max_jobs=2).errors == 2  # no minute's wait between its two tries
    assert job_rows(vqueue)[0]["status"] == "failed"


@pytest.mark.parametrize("backoff", ["soon", -1, float("nan"), True])
def test_a_bad_backoff_is_refused_before_anything_is_written(vqueue: Queue, backoff: Any) -> None:
    with pytest.raises(ConfigError, match="bad backoff"):
        vqueue.enqueue("jobs:noop", backoff=backoff)
    assert job_rows(vqueue) == []
