"""Timeout values: parsed, read back from rows, chosen by precedence, and written as people read them."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

import batchq
from batchq import ConfigError
from batchq.core.config import parse_timeout
from batchq.core.failures import timeout_fingerprint
from batchq.core.job import Job
from batchq.jobs.timeouts import _not_to_interrupt, job_timeout, stored_timeout, timeout_text


def job(timeout: Any) -> Job:
    return Job(1, "default", "m:f", None, "json", 0, 0, 10, timeout, "t" * 32)


@batchq.task(timeout="2m")
def declared() -> None:
    pass


def plain() -> None:
    pass


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, None),
        (30, 30.0),
        ("1h30m", 5400.0),
        ("250ms", 0.25),
        (timedelta(minutes=2), 120.0),
        (Decimal("1.5"), 1.5),
    ],
)
def test_parse_timeout(value: Any, seconds: float | None) -> None:
    assert parse_timeout(value) == seconds


@pytest.mark.parametrize("value", [0, 0.0, "0s", timedelta(0), -1, "soon", True, [], float("inf")])
def test_parse_timeout_refuses(value: Any) -> None:
    with pytest.raises(ConfigError, match="bad timeout"):
        parse_timeout(value)


@pytest.mark.parametrize(
    ("stored", "seconds"),
    [
        (None, None),
        (30.0, 30.0),
        (Decimal("2.5"), 2.5),
        ("45", 45.0),
        (b"45", 45.0),
        (0, None),
        (-3, None),
        ("soon", None),
        (float("nan"), None),
        (float("inf"), None),
        (1e300, None),
    ],
)
def test_stored_timeout_reads_what_a_row_may_hold(stored: Any, seconds: float | None) -> None:
    assert stored_timeout(stored) == seconds


def test_precedence_job_then_task_then_run() -> None:
    assert job_timeout(job(5), declared, 60) == 5
    assert job_timeout(job(None), declared, 60) == 120
    assert job_timeout(job(None), plain, 60) == 60
    assert job_timeout(job(None), plain, None) is None
    assert job_timeout(job("junk"), plain, 60) == 60  # a row written by hand: the next default


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.25, "250ms"), (1, "1s"), (1.5, "1.5s"), (30, "30s"), (90, "1m30s"), (7200, "2h00m")],
)
def test_timeout_text(seconds: float, text: str) -> None:
    assert timeout_text(seconds) == text


def test_timeouts_of_a_task_share_a_fingerprint_of_their_own() -> None:
    assert timeout_fingerprint("m:f") == timeout_fingerprint("m:f") != timeout_fingerprint("m:g")


def test_jobtimeout_never_lands_in_the_workers_bookkeeping_or_asyncio() -> None:
    import asyncio.base_events
    import selectors

    import batchq.jobs.timeouts
    import batchq.runtime.worker

    assert _not_to_interrupt(batchq.runtime.worker.__file__)
    assert _not_to_interrupt(batchq.jobs.timeouts.__file__)
    assert _not_to_interrupt(asyncio.base_events.__file__)
    assert not _not_to_interrupt(__file__)  # a task's code
    assert not _not_to_interrupt(selectors.__file__)  # an event loop waiting for something to do
