"""Expiry and absolute run times (issue 30) through every way in, on every backend: enqueue,
enqueue_many, @task defaults, the async API, batchq.testing's drain and inline; and the checks
that refuse bad input before anything is written."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

import batchq
from batchq import ConfigError, JobExpired, Queue
from batchq.aio import AsyncQueue
from batchq.testing import drain, inline
from tests.support.db import job_rows, run_query, sql
from tests.support.processes import wait_for


def soon(seconds: float) -> datetime:
    return datetime.now(timezone.utc) + timedelta(seconds=seconds)


def expiry_of(q: Queue) -> dict[int, bool]:
    """Each job: has it an expiry?"""
    return {int(i): e is not None for i, e in sql(q, "SELECT id, expires_at FROM batchq_job")}


def server_now(q: Queue) -> datetime:
    value: Any = run_query(q, "server_now")[0][0]
    when = datetime.fromisoformat(value) if isinstance(value, str) else value
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


@batchq.task(expires="15m")
def short_lived(payload: Any = None) -> None:
    """A task whose jobs expire 15 minutes after their enqueue unless enqueue says."""


BAD: list[tuple[dict[str, Any], str]] = [
    ({"expires": 0}, "bad expires 0: a job must be allowed more than 0 s to start"),
    ({"expires": -1}, "bad expires -1"),
    ({"expires": "soon"}, "bad expires 'soon'"),
    ({"expires": datetime(2030, 1, 1)}, "bad expires: a naive datetime has no time zone"),
    ({"run_at": datetime(2030, 1, 1)}, "bad run_at: a naive datetime has no time zone"),
    ({"run_at": 60}, "bad run_at 60: use an aware datetime"),
    ({"run_at": soon(60), "delay": 5}, "give delay or run_at, not both"),
    ({"delay": 60, "expires": 60}, "it is not after the job is due"),
    ({"run_at": soon(3600), "expires": "30m"}, "it is not after the job is due"),
    ({"run_at": soon(3600), "expires": soon(60)}, "it is not after the job is due"),
    ({"expires": soon(-1)}, "the job could never start"),
]


@pytest.mark.parametrize(("options", "needle"), BAD, ids=[n for _, n in BAD])
def test_bad_input_is_one_line_before_anything_is_written(
    queue: Queue, options: dict[str, Any], needle: str
) -> None:
    for call in (
        lambda: queue.enqueue("jobs:noop", None, **options),
        lambda: queue.enqueue_many("jobs:noop", [1, 2], **options),
    ):
        with pytest.raises(ConfigError) as caught:
            call()
        assert needle in str(caught.value) and "\n" not in str(caught.value)
    assert job_rows(queue) == []


def test_a_task_refuses_an_expiry_that_is_no_duration() -> None:
    with pytest.raises(ConfigError, match="use a duration"):
        batchq.task(expires=soon(60))
    with pytest.raises(ConfigError, match="more than 0 s"):
        batchq.task(expires=0)


def test_enqueue_many_and_the_tasks_default_set_the_expiry(queue: Queue) -> None:
    assert queue.enqueue_many("jobs:noop", [1, 2, 3], expires="1h") == 3
    default = queue.enqueue(short_lived, None)
    plain = queue.enqueue("jobs:noop", None)
    found = expiry_of(queue)
    assert sum(found.values()) == 4 and found[int(default)] and not found[int(plain)]
    # enqueue's own wins over the task's: later than its 15 minutes
    later = queue.enqueue(short_lived, None, expires="2h")
    (left,) = sql(queue, f"SELECT expires_at FROM batchq_job WHERE id = {int(later)}")
    (task_default,) = sql(queue, f"SELECT expires_at FROM batchq_job WHERE id = {int(default)}")
    assert str(left[0]) > str(task_default[0])


def test_run_at_delays_a_job_as_a_datetime_delay_does(queue: Queue) -> None:
    job = queue.enqueue("jobs:echo", 1, run_at=soon(3600))
    past = queue.enqueue("jobs:echo", 2, run_at=soon(-3600))  # past: due now
    statuses = {row["id"]: row["status"] for row in job_rows(queue)}
    assert statuses == {job: "scheduled", past: "ready"}
    assert [(o.job_id, o.value) for o in drain(queue)] == [(past, 2)]
    assert [(o.job_id, o.value) for o in drain(queue, with_scheduled=True)] == [(job, 1)]


def test_drain_never_runs_an_expired_job_and_runs_its_due_sibling(queue: Queue) -> None:
    expired = queue.enqueue("jobs:echo", 1, expires=0.05)
    sibling = queue.enqueue("jobs:echo", 2)
    (row,) = sql(queue, f"SELECT expires_at FROM batchq_job WHERE id = {int(expired)}")
    deadline = row[0]
    deadline = datetime.fromisoformat(deadline) if isinstance(deadline, str) else deadline
    deadline = deadline if deadline.tzinfo else deadline.replace(tzinfo=timezone.utc)
    wait_for(lambda: server_now(queue) > deadline)  # past its expiry on the database's clock
    outcomes = drain(queue)
    assert [(o.job_id, o.value) for o in outcomes] == [(sibling, 2)]
    (failed,) = job_rows(queue)
    assert (failed["id"], failed["status"], failed["last_error"]) == (expired, "failed", "expired")
    result = queue.result(expired)
    assert result.status == "failed" and result.error is not None
    assert result.error.exception_class == f"{JobExpired.__module__}.{JobExpired.__name__}"


def test_inline_checks_both_then_runs_the_job_now(queue: Queue) -> None:
    with inline(queue) as block:
        queue.enqueue("jobs:echo", 1, run_at=soon(3600), expires=soon(7200))
        queue.enqueue_many("jobs:echo", [2, 3], expires="1m")
        with pytest.raises(ConfigError, match="not both"):
            queue.enqueue("jobs:echo", 4, run_at=soon(60), delay=1)
        with pytest.raises(ConfigError, match="naive"):
            queue.enqueue("jobs:echo", 5, expires=datetime(2030, 1, 1))
    assert [o.value for o in block.ran] == [1, 2, 3]
    assert job_rows(queue) == []


def test_the_async_api_takes_both(db_url: str, queue: Queue) -> None:
    async def main() -> tuple[int, int]:
        aq = AsyncQueue(db_url, task_modules=["jobs"])
        try:
            one = await aq.enqueue("jobs:noop", None, run_at=soon(3600), expires=soon(7200))
            with pytest.raises(ConfigError, match="not after the job is due"):
                await aq.enqueue("jobs:noop", None, delay=60, expires=30)
            many = await aq.enqueue_many("jobs:noop", [1, 2], expires="10m")
            return int(one), many
        finally:
            await aq.close()

    one, many = asyncio.run(main())
    assert many == 2
    assert list(expiry_of(queue).values()) == [True, True, True]
    assert {row["id"]: row["status"] for row in job_rows(queue)}[one] == "scheduled"
