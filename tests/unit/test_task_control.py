"""batchq.jobs.control without a database: what Snooze and Discard accept, and @task's retry_on,
discard_on and max_snoozes checked where the task is defined."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

import batchq
from batchq import ConfigError, Discard, Snooze
from batchq.core.job import Job, calling, current_job
from batchq.jobs.control import PLAIN, TaskControl, task_control


@pytest.mark.parametrize(
    ("seconds", "expected"), [(0, 0.0), (90, 90.0), (2.5, 2.5), (timedelta(minutes=5), 300.0), ("1h", 3600.0)]
)
def test_snooze_takes_seconds_a_timedelta_or_a_duration(seconds: Any, expected: float) -> None:
    assert Snooze(seconds).seconds == expected


@pytest.mark.parametrize(
    ("seconds", "message"),
    [
        (-1, "0 or more"),
        (float("nan"), "0 or more"),
        (10**12, "at most 100 years"),
        (float("inf"), "at most 100 years"),
        ("soon", "bad Snooze seconds"),
        (True, "bad Snooze seconds"),
        (None, None),
    ],
)
def test_bad_snooze_seconds_raise_config_error(seconds: Any, message: str | None) -> None:
    if message is None:  # None is no delay, as for every duration
        assert Snooze(seconds).seconds == 0.0
        return
    with pytest.raises(ConfigError, match=message):
        Snooze(seconds)


def test_snooze_and_discard_get_past_except_exception() -> None:
    for control in (Snooze(1), Discard("why")):
        assert isinstance(control, BaseException) and not isinstance(control, Exception)
    assert str(Snooze(30)) == "snoozed for 30 seconds"
    assert str(Discard("no such user")) == "no such user"


class Flaky(Exception):
    pass


@batchq.task(retry_on=Flaky, discard_on=[KeyError, ValueError], max_snoozes=5)
def declaring() -> None: ...


@batchq.task
def plain() -> None: ...


def test_retry_on_and_discard_on_are_kept_as_tuples() -> None:
    control = task_control(declaring)
    assert control == TaskControl((Flaky,), (KeyError, ValueError), 5)
    assert control.for_good(Flaky()) is None
    assert control.for_good(KeyError()) == "KeyError is in the task's discard_on"
    assert control.for_good(RuntimeError()) == "RuntimeError is not in the task's retry_on"
    assert control.for_good(Discard("x")) == "the task raised Discard"


def test_a_task_that_declares_nothing_shares_one_plain_control() -> None:
    assert task_control(plain) is PLAIN and task_control(print) is PLAIN
    assert PLAIN.for_good(RuntimeError()) is None


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ({"retry_on": int}, "bad retry_on entry <class 'int'>"),
        ({"retry_on": ValueError("x")}, "bad retry_on ValueError"),
        ({"retry_on": (ValueError, "KeyError")}, "bad retry_on entry 'KeyError'"),
        ({"discard_on": [object]}, "only exception classes"),
        ({"retry_on": ()}, "use max_errors=1"),
        ({"discard_on": "ValueError"}, "bad discard_on"),
        ({"discard_on": (Snooze,)}, "Snooze and Discard act whatever"),
        ({"retry_on": Discard}, "Snooze and Discard act whatever"),
        ({"max_snoozes": 0}, "bad max_snoozes 0"),
        ({"max_snoozes": 65536}, "bad max_snoozes"),
        ({"max_snoozes": True}, "bad max_snoozes"),
    ],
)
def test_bad_declarations_are_refused_where_the_task_is_defined(
    declared: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("<", ".").replace(">", ".")):
        batchq.task(**declared)


def job_of(error_count: Any) -> Job:
    return Job(7, "default", "t", None, "json", 0, error_count, 10)


def test_attempt_is_the_try_and_reads_a_row_written_by_hand_leniently() -> None:
    assert [job_of(n).attempt for n in (0, 2, "x", None, -3, True)] == [1, 3, 1, 1, 1, 1]


@pytest.mark.parametrize(
    ("payload", "schedule", "slot"),
    [
        (
            {"batchq_schedule": "s", "batchq_slot": "2026-11-27T03:00:00+01:00"},
            "s",
            "2026-11-27T03:00:00+01:00",
        ),
        ({"batchq_schedule": "s", "batchq_slot": "not a time"}, None, None),
        ({"batchq_slot": "2026-11-27T03:00:00+01:00"}, None, None),
        ({"batchq_schedule": 3, "batchq_slot": 4}, None, None),
        ({"x": 1}, None, None),
    ],
)
def test_a_scheduled_jobs_slot_is_read_from_its_payload(payload: Any, schedule: Any, slot: Any) -> None:
    with calling(job_of(0), (payload,)):
        job = current_job()
        assert job is not None
        assert (job.schedule, None if job.slot is None else job.slot.isoformat()) == (schedule, slot)
    assert current_job() is None
