"""Django Tasks for the tests: each records that it ran in the file DJPROJ_LEDGER."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from batchq.contrib.django.compat import TaskContext, task  # django.tasks, or the backport


def _record(label: str) -> None:
    with open(os.environ["DJPROJ_LEDGER"], "a") as ledger:
        ledger.write(label + "\n")


@task()
def add(a: int, b: int) -> int:
    _record(f"add {a} {b}")
    return a + b


@task()
def echo(*args: Any, **kwargs: Any) -> dict[str, Any]:
    _record("echo")
    return {"args": list(args), "kwargs": kwargs}


@task()
def record(label: str) -> None:
    _record(label)


@task(queue_name="mail")
def send_mail(to: str) -> str:
    _record(f"mail {to}")
    return f"sent to {to}"


@task()
def boom(message: str) -> None:
    _record("boom")
    raise ValueError(message)


@task()
def returns_false() -> bool:
    _record("false")
    return False


@task()
async def async_add(a: int, b: int) -> int:
    _record("async")
    return a + b


@task(takes_context=True)
def whoami(context: TaskContext) -> dict[str, Any]:
    return {"id": context.task_result.id, "attempt": context.attempt}


@task()
def not_json() -> Any:
    return object()


def plain_function(payload: Any = None) -> None:
    """Not a Task: a row naming it must not run it."""
    _record("plain function ran")


@task()
def noop_task(*args: Any, **kwargs: Any) -> None:
    return None


@task()
async def noop_task_async(*args: Any, **kwargs: Any) -> None:
    return None


@task()
def calculate_meaning_of_life() -> int:
    return 42


@task()
def hang_once(marker: str) -> str:
    """Hangs (until killed) the first time, returns at once the next."""
    if os.path.exists(marker):
        _record("second try")
        return "done"
    open(marker, "w").close()
    _record("first try")
    import time

    time.sleep(300)
    return "slept"


@task()
def snooze_once(label: str) -> str:
    """Snoozes an hour the first time it runs (batchq.Snooze), then succeeds."""
    import batchq

    ledger = Path(os.environ["DJPROJ_LEDGER"])
    first = not ledger.exists() or label not in ledger.read_text().splitlines()
    _record(label)
    if first:
        raise batchq.Snooze(3600)
    return "woke"


@task()
def discard(reason: str) -> None:
    import batchq

    _record("discard")
    raise batchq.Discard(reason)
