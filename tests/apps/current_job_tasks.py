"""Tasks that read batchq.current_job() (tests/contract/test_current_job.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import batchq


def whoami(payload: Any = None) -> dict[str, Any]:
    job = batchq.current_job()
    assert job is not None
    return {"id": job.id, "queue": job.queue, "task": job.task, "try": job.error_count + 1}


async def whoami_async() -> int | None:
    await asyncio.sleep(0)
    job = batchq.current_job()
    return None if job is None else job.id


def fails_first(payload: Any = None) -> int:
    job = batchq.current_job()
    assert job is not None
    if job.error_count == 0:
        raise RuntimeError("first try")
    return job.error_count + 1


def my_slot(payload: Any = None) -> dict[str, Any]:
    """A scheduled job's schedule and slot, and which try this is, as current_job() tells them."""
    job = batchq.current_job()
    assert job is not None
    return {
        "schedule": job.schedule,
        "slot": None if job.slot is None else job.slot.isoformat(),
        "attempt": job.attempt,
    }
