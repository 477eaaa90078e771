"""Jobs and messages take the same kinds of delay (issue 23, item 5): seconds, a duration, or an
aware datetime, that instant on the database server's clock (a past one: now); a naive datetime
is refused by both, with the same error."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest

from batchq import ConfigError, MessageQueue, Queue
from tests.support.db import app_connection, job_rows, run_query

TOKYO = timezone(timedelta(hours=9))


@pytest.fixture
def mq(db_url: str) -> Iterator[MessageQueue]:
    m = MessageQueue(db_url)
    m.create_queue("later")
    yield m
    m.close()


def server_in(queue: Queue, seconds: float, tz: timezone = timezone.utc) -> datetime:
    """The database server's now plus ``seconds``, as an aware datetime in ``tz``."""
    return datetime.fromtimestamp(queue.schedules.server_now() + seconds, tz)


def due_in(queue: Queue, job_id: int) -> float:
    """Seconds until the job is due, to the millisecond (SQLite's julianday arithmetic is off by
    a few microseconds)."""
    [(seconds,)] = run_query(queue, "job_seconds_until_due", {"id": job_id})
    return round(float(seconds), 3)


def status(queue: Queue, job_id: int) -> str:
    return next(row["status"] for row in job_rows(queue) if row["id"] == job_id)


@pytest.mark.parametrize("tz", [timezone.utc, TOKYO], ids=["utc", "tokyo"])
def test_enqueue_at_an_aware_datetime_runs_at_that_instant(queue: Queue, tz: timezone) -> None:
    job_id = queue.enqueue("jobs:noop", delay=server_in(queue, 3600, tz))
    assert 3590 < due_in(queue, job_id) <= 3600
    assert status(queue, job_id) == "scheduled"
    unique = queue.enqueue("jobs:noop", unique_key="at", delay=server_in(queue, 600, tz))
    assert 590 < due_in(queue, unique) <= 600
    assert queue.enqueue_many("jobs:noop", [1, 2], delay=server_in(queue, 60, tz)) == 2
    assert all(50 < due_in(queue, row["id"]) <= 60 for row in job_rows(queue)[2:])


def test_enqueue_at_a_past_datetime_is_due_now(queue: Queue) -> None:
    job_id = queue.enqueue("jobs:noop", delay=server_in(queue, -3600))
    assert -5 < due_in(queue, job_id) <= 0
    assert status(queue, job_id) == "ready"
    assert queue.enqueue_many("jobs:noop", [1], delay=datetime(2000, 1, 1, tzinfo=timezone.utc)) == 1
    assert [row["status"] for row in job_rows(queue)] == ["ready", "ready"]


def test_enqueue_at_a_datetime_on_the_callers_connection(queue: Queue, db_url: str) -> None:
    app = app_connection(db_url)
    try:
        job_id = queue.enqueue("jobs:noop", delay=server_in(queue, 120), conn=app)
        app.commit()
    finally:
        app.close()
    assert 110 < due_in(queue, job_id) <= 120


SAME_KINDS: list[Any] = [5, 2.5, Decimal("1.5"), "90s", "1h30m", timedelta(minutes=2), None]


@pytest.mark.parametrize("delay", SAME_KINDS, ids=repr)
def test_jobs_and_messages_take_the_same_delays(queue: Queue, mq: MessageQueue, delay: Any) -> None:
    queue.enqueue("jobs:noop", delay=delay)
    mq.send("later", 1, delay=delay)
    aware = datetime(2030, 1, 1, 9, tzinfo=timezone.utc)
    queue.enqueue("jobs:noop", delay=aware)
    mq.send("later", 1, delay=aware)


def test_a_naive_datetime_is_refused_by_both_alike(queue: Queue, mq: MessageQueue) -> None:
    naive = datetime(2030, 1, 1, 9)
    errors = []
    for write in (
        lambda: queue.enqueue("jobs:noop", delay=naive),
        lambda: queue.enqueue_many("jobs:noop", [1], delay=naive),
        lambda: mq.send("later", 1, delay=naive),
        lambda: mq.send_batch("later", [1], delay=naive),
    ):
        with pytest.raises(ConfigError, match="naive datetime has no time zone") as caught:
            write()
        errors.append(str(caught.value))
    assert len(set(errors)) == 1
    assert job_rows(queue) == [] and mq.metrics("later").queue_length == 0
