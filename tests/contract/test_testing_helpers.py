"""batchq.testing, the helpers for users' own test suites, on every backend (issue 24 part 4):
drain() runs due jobs in-process with batchq's Worker; inline() runs them at enqueue; the
assertions read the real table. tests/apps/testing_app.py holds the tasks."""

from __future__ import annotations

from collections.abc import Iterator
from unittest import mock

import pytest

from batchq import PayloadError, Queue, TaskNotAllowed
from batchq.testing import (
    DrainLimit,
    JobFailed,
    assert_enqueued,
    assert_not_enqueued,
    drain,
    enqueued_jobs,
    inline,
)
from tests.support.db import job_rows

APP = "testing_app"


@pytest.fixture
def q(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Queue]:
    """A queue allowed to call testing_app; BATCHQ_URL there too, for the tasks' own Queue()."""
    import testing_app

    testing_app.reset()
    monkeypatch.setenv("BATCHQ_URL", db_url)
    monkeypatch.setenv("BATCHQ_TASK_MODULES", APP)
    queue = Queue(db_url, task_modules=[APP])
    yield queue
    queue.close()


def calls() -> list[tuple[str, object]]:
    import testing_app

    return list(testing_app.CALLS)


# -- drain ------------------------------------------------------------------------------------


def test_drain_runs_due_jobs_and_returns_their_outcomes(q: Queue) -> None:
    import testing_app as app

    ok = q.enqueue(app.note, {"n": 1})
    bad = q.enqueue(app.boom, 2)
    no = q.enqueue(app.says_no)
    coro = q.enqueue(app.async_note, (1, 2))  # a tuple: JSON gives the task a list
    outcomes = drain(q)
    expected = [(ok, True), (bad, False), (no, False), (coro, True)]
    assert [(o.job_id, o.succeeded) for o in outcomes] == expected
    assert outcomes.values() == [{"noted": {"n": 1}}, "async"]
    failed = outcomes.failed[0]
    assert failed.error is not None and failed.error.startswith("ValueError: boom 2")
    assert isinstance(failed.exception, ValueError) and str(failed.exception) == "boom 2"
    assert outcomes[2].error == "the task returned False" and outcomes[2].exception is None
    assert calls() == [("note", {"n": 1}), ("boom", 2), ("says_no", None), ("async_note", [1, 2])]
    # As `batchq run` leaves them: successes deleted, failures waiting for their retry.
    rows = job_rows(q)
    states = [(r["id"], r["status"], r["error_count"]) for r in rows]
    assert states == [(bad, "scheduled", 1), (no, "scheduled", 1)]
    assert rows[0]["last_error"].startswith("ValueError: boom 2")
    with pytest.raises(ValueError, match="boom 2"):
        outcomes.raise_errors()
    with pytest.raises(JobFailed, match=f"job {no} .*the task returned False"):
        outcomes[2].raise_error()


def test_drain_raise_errors_raises_what_the_task_raised_after_the_drain(q: Queue) -> None:
    import testing_app as app

    q.enqueue(app.boom, 1)
    q.enqueue(app.note, 2)
    with pytest.raises(ValueError, match="boom 1"):
        drain(q, raise_errors=True)
    assert calls() == [("boom", 1), ("note", 2)]  # the drain went on; the error came after


def test_drain_leaves_delayed_jobs_unless_told_and_then_only_within_the_window(q: Queue) -> None:
    import testing_app as app

    q.enqueue(app.note, "soon", delay="10m")
    q.enqueue(app.note, "later", delay="2d")
    assert drain(q) == []
    assert [o.value for o in drain(q, with_scheduled="1h")] == [{"noted": "soon"}]
    assert [o.value for o in drain(q, with_scheduled=True)] == [{"noted": "later"}]
    assert job_rows(q) == []


def test_a_failed_try_is_retried_by_a_later_drain_with_scheduled(q: Queue) -> None:
    import testing_app as app

    q.enqueue(app.flaky, {"key": "retry", "fails": 1})
    assert [o.succeeded for o in drain(q)] == [False]
    assert drain(q) == []  # its backoff: not due
    assert [o.value for o in drain(q, with_scheduled=True)] == ["ok"]
    q.enqueue(app.twice)  # @task(max_errors=2)
    drain(q)
    drain(q, with_scheduled=True)
    [row] = job_rows(q)
    assert (row["status"], row["error_count"]) == ("failed", 2)
    assert drain(q, with_scheduled=True) == []


def test_drain_of_every_queue_follows_jobs_into_queues_it_had_not_seen(q: Queue) -> None:
    import testing_app as app

    q.enqueue(app.fan_out, {"items": [1, 2], "queue": "fanned"})
    outcomes = drain(q)
    assert [(o.queue, o.task) for o in outcomes] == [
        ("default", "testing_app:fan_out"),
        ("fanned", "testing_app:note"),
        ("fanned", "testing_app:note"),
    ]
    q.enqueue(app.fan_out, {"items": [3], "queue": "elsewhere"})
    assert [o.queue for o in drain(q, "default")] == ["default"]  # only the queues named
    assert_enqueued(q, app.note, 3, queue="elsewhere")
    assert [o.value for o in drain(q, ["elsewhere"])] == [{"noted": 3}]


def test_drain_honours_the_allow_list_and_paused_queues(q: Queue, db_url: str) -> None:
    import testing_app as app

    q.enqueue(app.note, "paused", queue="held")
    q.pause("held")
    listless = Queue(db_url, task_modules=[])
    try:
        listless.enqueue(app.note, "refused")  # the producer needs no list for a function...
        [outcome] = drain(listless)  # ...the worker does: refused, never called
    finally:
        listless.close()
    assert outcome.failed and outcome.error is not None
    assert outcome.error.startswith("TaskNotAllowed: ") and isinstance(outcome.exception, TaskNotAllowed)
    assert calls() == []
    assert drain(q, "held") == []
    q.resume("held")
    assert [o.value for o in drain(q, "held")] == [{"noted": "paused"}]


def test_drain_stops_a_job_that_enqueues_itself(q: Queue) -> None:
    import testing_app as app

    q.enqueue(app.again)
    with pytest.raises(DrainLimit, match="drain ran 5 jobs and more were due"):
        drain(q, max_jobs=5)
    assert len(calls()) == 6


# -- inline -----------------------------------------------------------------------------------


def test_inline_runs_the_job_at_enqueue_and_writes_nothing(q: Queue) -> None:
    import testing_app as app

    with inline() as block:
        first = q.enqueue(app.note, (1, "é"), queue="mail", delay="1h", priority=3)
        assert calls() == [("note", [1, "é"])]  # at once, the payload read back as JSON gives it
        assert q.enqueue_many("testing_app:note", [{"a": 1}, None]) == 2
        second = q.enqueue(app.async_note)
    assert (first, second) == (1, 4) and first.created
    values = [{"noted": [1, "é"]}, {"noted": {"a": 1}}, {"noted": None}, "async"]
    assert [o.value for o in block.ran] == values
    assert [o.queue for o in block.ran] == ["mail", "default", "default", "default"]
    assert job_rows(q) == []
    q.enqueue(app.note, "after")  # the block is over: a row again
    assert_enqueued(q, app.note, "after", count=1)
    assert calls()[-1] == ("async_note", None)


def test_inline_checks_what_enqueue_checks_before_running(q: Queue) -> None:
    import testing_app as app

    with inline():
        with pytest.raises(PayloadError):
            q.enqueue(app.note, {"when": object()})
        with pytest.raises(PayloadError, match="at most 31 levels"):
            q.enqueue(app.note, [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]])
        with pytest.raises(Exception, match="bad queue name"):
            q.enqueue(app.note, 1, queue="no spaces")
        with pytest.raises(TaskNotAllowed):
            q.enqueue("os:system", "touch /tmp/x")
        with pytest.raises(Exception, match="unique_key"):
            q.enqueue(app.note, 1, unique_key="")
        with pytest.raises(TypeError):
            q.enqueue(app.note, 1, no_such_option=True)
    assert calls() == []


def test_inline_raises_the_tasks_errors_or_records_them(q: Queue) -> None:
    import testing_app as app

    with inline():
        with pytest.raises(ValueError, match="boom 1"):
            q.enqueue(app.boom, 1)
        with pytest.raises(JobFailed, match="the task returned False"):
            q.enqueue(app.says_no)
    with inline(errors="record") as block:
        q.enqueue(app.boom, 2)
        q.enqueue(app.says_no)
        q.enqueue(app.note, 3)
    assert [o.succeeded for o in block.ran] == [False, False, True]
    assert block.ran[0].error is not None and block.ran[0].error.startswith("ValueError: boom 2")
    with pytest.raises(ValueError, match="boom 2"):
        block.ran.raise_errors()


def test_inline_resolves_tasks_under_a_workers_allow_list(q: Queue, db_url: str) -> None:
    import testing_app as app

    listless = Queue(db_url, task_modules=[])
    try:
        refused = pytest.raises(TaskNotAllowed, match="'testing_app' is not in BATCHQ_TASK_MODULES")
        with inline(task_modules=[]), refused:
            listless.enqueue(app.note, 1)
        with inline():  # the Queue has no list: BATCHQ_TASK_MODULES (testing_app), as a worker's
            listless.enqueue(app.note, 2)
    finally:
        listless.close()
    assert calls() == [("note", 2)]


def test_inline_of_one_queue_leaves_other_queues_alone_and_blocks_nest(q: Queue, db_url: str) -> None:
    import testing_app as app

    other = Queue(db_url, task_modules=[APP])
    try:
        with inline(q) as block:
            q.enqueue(app.note, "inline")
            other.enqueue(app.note, "row")
            with inline(errors="record") as inner:
                other.enqueue(app.boom, "inner")
            with pytest.raises(ValueError):
                q.enqueue(app.boom, "outer")  # still the outer block's, errors raised
            other.enqueue(app.note, "row again")
        assert [o.value for o in block.ran] == [{"noted": "inline"}, None]
        assert [o.failed for o in inner.ran] == [True]
        q.enqueue(app.note, "row too")
    finally:
        other.close()
    assert [job.payload for job in enqueued_jobs(q)] == ["row", "row again", "row too"]


# -- assertions --------------------------------------------------------------------------------


def test_assertions_match_task_payload_queue_and_count(q: Queue) -> None:
    import testing_app as app

    first = q.enqueue(app.note, {"to": "a@b.c", "id": 7}, queue="mail")
    q.enqueue(app.note, {"to": "d@e.f", "id": 8}, queue="mail", delay="1h")
    q.enqueue("testing_app:boom", 1)
    [job] = assert_enqueued(q, app.note, {"to": "a@b.c", "id": 7})
    seen = (job.id, job.queue, job.task, job.status, job.due)
    assert seen == (first, "mail", "testing_app:note", "ready", True)
    assert_enqueued(q, "testing_app:note", queue="mail", count=2)
    assert_enqueued(q, app.note, {"to": mock.ANY, "id": 8}, status="scheduled")
    assert_enqueued(q, count=3)
    assert_not_enqueued(q, app.note, queue="default")
    assert_not_enqueued(q, app.says_no)
    later = enqueued_jobs(q, task=app.note, payload={"to": "d@e.f", "id": 8})
    assert [j.due for j in later] == [False] and 3500 < later[0].due_in <= 3600


def test_assertion_failures_say_what_was_wanted_and_list_what_is_there(q: Queue) -> None:
    import testing_app as app

    with pytest.raises(AssertionError) as empty:
        assert_enqueued(q, app.note)
    assert str(empty.value) == "expected a job of task 'testing_app:note'; found 0. No job is enqueued."
    q.enqueue(app.note, {"to": "a@b.c"}, queue="mail")
    q.enqueue(app.boom, 1, delay="90s")
    with pytest.raises(AssertionError) as wrong:
        assert_enqueued(q, app.note, {"to": "x@y.z"}, queue="mail", count=1)
    lines = str(wrong.value).splitlines()
    assert lines[0] == (
        "expected 1 job of task 'testing_app:note' with payload {'to': 'x@y.z'} in queue 'mail'; "
        "found 0. Enqueued (2):"
    )
    assert lines[1].endswith("testing_app:note({'to': 'a@b.c'}) in queue 'mail' [ready]")
    assert "testing_app:boom(1) in queue 'default' [scheduled, due in" in lines[2]
    with pytest.raises(AssertionError, match="expected no job of task 'testing_app:boom'; found 1"):
        assert_not_enqueued(q, app.boom)


def test_an_unreadable_payload_is_shown_not_raised(db_url: str, q: Queue) -> None:
    import testing_app as app

    signer = Queue(db_url, task_modules=[APP], secret=b"one secret")
    try:
        signer.enqueue(app.note, {"x": 1}, serializer="pickle")
    finally:
        signer.close()
    [job] = enqueued_jobs(q)
    assert "unreadable payload" in repr(job.payload) and job.payload != {"x": 1}
    assert_not_enqueued(q, payload={"x": 1})


def test_drain_stops_a_job_at_its_timeout_as_a_worker_does(q: Queue) -> None:
    import testing_app as app

    q.enqueue(app.sleepy, 30, timeout="0.5s")
    [outcome] = drain(q)
    assert outcome.failed and outcome.error is not None
    assert outcome.error.startswith("JobTimeout: timed out after 500ms"), outcome.error
    [row] = job_rows(q)
    assert (row["status"], row["error_count"]) == ("scheduled", 1)


def test_inline_checks_a_typed_queues_schema(q: Queue) -> None:
    import testing_app as app

    q.create_queue("typed", schema={"type": "object", "required": ["id"]})
    with inline() as block:
        with pytest.raises(PayloadError, match="does not match the type of queue 'typed'"):
            q.enqueue(app.note, {"name": "no id"}, queue="typed")
        q.enqueue(app.note, {"id": 1}, queue="typed")
    assert calls() == [("note", {"id": 1})] and len(block.ran) == 1
