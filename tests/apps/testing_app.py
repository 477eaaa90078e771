"""Tasks for the tests of batchq.testing (drain, inline, assertions), run in the test's process:
they note what they were called with in CALLS."""

from __future__ import annotations

from typing import Any

from batchq import Queue, task

CALLS: list[tuple[str, Any]] = []


def note(payload: Any = None) -> Any:
    CALLS.append(("note", payload))
    return {"noted": payload}


def boom(payload: Any = None) -> None:
    CALLS.append(("boom", payload))
    raise ValueError(f"boom {payload}")


def says_no(payload: Any = None) -> bool:
    CALLS.append(("says_no", payload))
    return False


async def async_note(payload: Any = None) -> str:
    CALLS.append(("async_note", payload))
    return "async"


def fan_out(payload: dict[str, Any]) -> None:
    """Enqueue one note job per item into payload['queue'], as an app's job would: Queue() on
    $BATCHQ_URL."""
    CALLS.append(("fan_out", payload))
    queue = Queue()
    try:
        for item in payload["items"]:
            queue.enqueue(note, item, queue=payload["queue"])
    finally:
        queue.close()


def again(payload: Any = None) -> None:
    """Enqueues itself: a drain must stop."""
    CALLS.append(("again", payload))
    queue = Queue()
    try:
        queue.enqueue(again, payload)
    finally:
        queue.close()


_fails_left: dict[str, int] = {}


def reset() -> None:
    CALLS.clear()
    _fails_left.clear()


def flaky(payload: dict[str, Any]) -> str:
    """Fails payload['fails'] times per key, then succeeds."""
    key = payload["key"]
    left = _fails_left.setdefault(key, payload["fails"])
    CALLS.append(("flaky", left))
    if left:
        _fails_left[key] = left - 1
        raise RuntimeError(f"flaky, {left} to go")
    return "ok"


@task(max_errors=2)
def twice(payload: Any = None) -> None:
    CALLS.append(("twice", payload))
    raise RuntimeError("always")


def sleepy(seconds: float) -> None:
    import time

    CALLS.append(("sleepy", seconds))
    time.sleep(seconds)
