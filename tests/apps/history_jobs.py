"""Tasks of the history tests: what they return, and what they cost. Importable as
`history_jobs` (BATCHQ_TASK_MODULES=history_jobs)."""

from __future__ import annotations

import time
from typing import Any


def returns(payload: Any) -> Any:
    """Returns its payload: the job's result."""
    return payload


def returns_a_set(payload: Any = None) -> set[int]:
    """A value JSON cannot carry."""
    return {1, 2}


def returns_text_of(length: int) -> str:
    """A string of ``length`` characters: its JSON is length + 2 bytes."""
    return "x" * length


def burns_cpu(seconds: float) -> int:
    """Spin for ``seconds`` of CPU time of this thread."""
    start, n = time.thread_time(), 0
    while time.thread_time() - start < seconds:
        n += 1
    return n


def allocates(megabytes: int) -> int:
    """Hold ``megabytes`` of touched memory until it returns."""
    block = bytearray(megabytes * 1024 * 1024)
    block[::4096] = b"x" * len(range(0, len(block), 4096))
    return len(block)


def fails(payload: Any = None) -> None:
    raise RuntimeError(f"history failure: {payload!r}")
