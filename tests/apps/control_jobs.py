"""Tasks that steer their own jobs (batchq.jobs.control): tests/contract/test_task_control.py and
tests/acceptance/test_task_control.py. Calls are counted as files in a folder the payload names,
so that a count survives the worker process."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path
from typing import Any

import batchq
from batchq import Discard, Snooze


class Transient(Exception):
    """Worth another try."""


class Permanent(Exception):
    """Not worth another try."""


def _call_number(folder: str) -> int:
    """This call's number (1, 2, ...), counted in ``folder`` across processes."""
    (Path(folder) / uuid.uuid4().hex).touch()
    return len(os.listdir(folder))


def snooze_then_succeed(payload: dict[str, Any]) -> int:
    """Snoozes ``times`` times for ``seconds``, then returns which call succeeded."""
    number = _call_number(payload["dir"])
    if number <= payload["times"]:
        raise Snooze(payload.get("seconds", 0))
    return number


def snooze_for(payload: dict[str, Any]) -> None:
    """Raises Snooze with the seconds given ("nan" and other text read as a float)."""
    seconds = payload["seconds"]
    raise Snooze(float(seconds) if isinstance(seconds, str) else seconds)


def snooze_once_then_signal(payload: dict[str, Any]) -> str:
    """The first call marks ``started``, waits for ``go`` (the test locks the job's row
    meanwhile, so that the snooze's finish waits for it) and snoozes; a later call succeeds."""
    number = _call_number(payload["dir"])
    if number == 1:
        Path(payload["started"]).touch()
        deadline = time.monotonic() + 60
        while not Path(payload["go"]).exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        raise Snooze(0)
    return "done"


def snooze_in_try(payload: dict[str, Any]) -> str:
    """A task's ``except Exception`` does not swallow a Snooze (a BaseException)."""
    if _call_number(payload["dir"]) == 1:
        try:
            raise Snooze(0)
        except Exception:
            return "swallowed"
    return "second call"


async def snooze_async(payload: dict[str, Any]) -> int:
    await asyncio.sleep(0)
    number = _call_number(payload["dir"])
    if number == 1:
        raise Snooze(0)
    return number


def discard(payload: dict[str, Any] | None = None) -> None:
    raise Discard((payload or {}).get("reason", "no such customer"))


@batchq.task(discard_on=(Permanent,))
def discard_on_permanent(payload: dict[str, Any]) -> None:
    raise Permanent(payload["why"]) if payload["kind"] == "permanent" else Transient(payload["why"])


@batchq.task(retry_on=Transient)
def retry_on_transient(payload: dict[str, Any]) -> None:
    raise Transient(payload["why"]) if payload["kind"] == "transient" else ValueError(payload["why"])


@batchq.task(max_snoozes=2)
def snooze_forever() -> None:
    raise Snooze(0)


@batchq.task(retry_on=Transient, timeout=0.3)
def slow_with_retry_on() -> None:
    time.sleep(5)


def chain_parent() -> None:
    raise Discard("the order was cancelled")


def chain_child() -> str:
    return "ran"
