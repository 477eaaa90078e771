"""Tasks that report progress (tests/contract/test_progress.py, tests/acceptance/test_progress.py).

Each reads its own job back while it runs through a connection of its own (another Queue), as
an operator's `batchq explain` would."""

from __future__ import annotations

import contextvars
import threading
import time
from pathlib import Path
from typing import Any

import batchq
from batchq import Queue
from batchq.ops.registry import list_workers
from tests.support.db import sql  # run in the test's own process (Worker, not `batchq run`)

INTERVAL = 1.0  # batchq.jobs.reporting.WRITE_INTERVAL_SECONDS


def _seen(url: str) -> dict[str, Any]:
    """The running job as another connection sees it: explain, and `batchq status`."""
    job = batchq.current_job()
    assert job is not None
    reader = Queue(url)
    try:
        found = reader.explain(job.id)
        workers = [info for info in list_workers(reader.backend) if info.job_id == job.id]
    finally:
        reader.close()
    return {
        "progress": found.progress,
        "message": found.progress_message,
        "this_try": found.progress_this_try,
        "details": list(found.details),
        "status_progress": [(info.job_progress, info.job_progress_message) for info in workers],
    }


def report_and_read(payload: dict[str, Any]) -> dict[str, Any]:
    batchq.progress(0.25, "a quarter done")
    return _seen(payload["url"])


def chatty(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """A thousand reports at once: one is written; after the interval, the next writes the latest."""
    seen = []
    for step in range(1, 1001):
        batchq.progress(step / 2000, f"step {step}")
    seen.append(_seen(payload["url"]))
    time.sleep(INTERVAL + 0.1)
    batchq.progress(0.75, "after the pause")
    seen.append(_seen(payload["url"]))
    batchq.progress(0.8, "held back")  # within the interval: held, written only if the try fails
    if payload.get("fail"):
        raise RuntimeError("fails after reporting")
    return seen


def taken_back(payload: dict[str, Any]) -> dict[str, Any]:
    """Reports; its job is taken back and claimed by another worker; it reports again."""
    batchq.progress(0.1, "before")
    job = batchq.current_job()
    assert job is not None
    other = Queue(payload["url"])
    try:
        # gc-processing put it back and another worker claimed it: its token is another's now
        take_back = "UPDATE batchq_job SET locked_by = 'other:1', claim_token = 'another-claim'"
        sql(other, take_back + f" WHERE id = {int(job.id)}")
    finally:
        other.close()
    time.sleep(INTERVAL + 0.1)
    batchq.progress(0.9, "zombie")
    return _seen(payload["url"])


def reports_twice(payload: Any = None) -> str:
    batchq.progress(0.5, "half")
    batchq.progress(1, "done")
    return "ok"


def slow_reporter(payload: dict[str, Any]) -> None:
    """For a real `batchq run`: reports, leaves a marker, waits for the test to read, ends."""
    batchq.progress(0.4, "resizing 40 of 100")
    Path(payload["marker"]).write_text("reported")
    release = Path(payload["release"])
    deadline = time.monotonic() + 60
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def report_forever(payload: Any = None) -> None:
    """Reports until its timeout stops it (every report written when the interval is 0)."""
    step = 0
    while True:
        step += 1
        batchq.progress(step % 100 / 100, f"step {step}")


def leaves_a_reporter(payload: dict[str, Any]) -> None:
    """Starts a thread in its context that reports once the next job has started, and returns."""
    go, done = Path(payload["go"]), Path(payload["done"])

    def late() -> None:
        while not go.exists():
            time.sleep(0.01)
        batchq.progress(0.99, "from a thread of an ended call")
        done.write_text("reported")

    threading.Thread(target=contextvars.copy_context().run, args=(late,), daemon=True).start()


def next_job(payload: dict[str, Any]) -> None:
    """Reports, lets the previous job's thread report, and waits for it to have done so."""
    batchq.progress(0.2, "the next job")
    Path(payload["go"]).write_text("go")
    deadline = time.monotonic() + 30
    while not Path(payload["done"]).exists() and time.monotonic() < deadline:
        time.sleep(0.01)


async def reports_async(payload: Any = None) -> str:
    """An async def task: asyncio.run() copies the worker's context, so its reports count."""
    import asyncio

    await asyncio.sleep(0)
    batchq.progress(0.5, "half, from a coroutine")
    return "ok"
