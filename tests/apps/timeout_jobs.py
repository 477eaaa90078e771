"""Tasks that run too long, for the timeout tests (BATCHQ_TASK_MODULES=jobs,timeout_jobs).

A run given {"n": N} in its payload writes N into test_ledger as it starts (a worker process's
tests count runs so); the payload's other keys say how long to go on.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import batchq

from jobs import record


def spin(payload: dict[str, Any] | None = None) -> None:
    """Pure Python, forever: only an exception raised in it stops it."""
    _started(payload)
    while True:
        pass


def sleep(payload: dict[str, Any]) -> None:
    """time.sleep(payload['seconds']): a C call that a signal interrupts."""
    _started(payload)
    time.sleep(payload["seconds"])


async def async_sleep(payload: dict[str, Any]) -> None:
    _started(payload)
    await asyncio.sleep(payload["seconds"])


async def async_spin(payload: dict[str, Any]) -> None:
    """An async task that never awaits: the event loop never gets a say."""
    _started(payload)
    while True:
        pass


def swallow(payload: dict[str, Any]) -> None:
    """Catches JobTimeout and keeps going: only the watchdog ends it."""
    _started(payload)
    deadline = time.monotonic() + payload["seconds"]
    while time.monotonic() < deadline:
        try:
            while time.monotonic() < deadline:
                pass
        except batchq.JobTimeout:
            pass


def blocked(payload: dict[str, Any]) -> None:
    """Stuck where no signal reaches: SIGALRM blocked in this thread, then a long sleep (as a C
    library that masks signals around a blocking call would be)."""
    _started(payload)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    try:
        time.sleep(payload["seconds"])
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})


def with_children(payload: dict[str, Any]) -> None:
    """Starts `sleep 300` and leaves it; then waits on a shell that started one more in the
    background (JobTimeout in subprocess.run kills the shell, not its child). Their pids go into
    the files payload['folder']/child and .../grandchild. With payload['blocked'], no signal
    reaches the wait: the watchdog ends the worker."""
    _started(payload)
    folder = Path(payload["folder"])
    child = subprocess.Popen(["sleep", "300"])
    (folder / "child").write_text(str(child.pid))
    if payload.get("blocked"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    try:
        subprocess.run(["sh", "-c", 'sleep 300 & echo $! > "$0"; wait', str(folder / "grandchild")])
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})


def _started(payload: dict[str, Any] | None) -> None:
    if payload and "n" in payload:
        record(payload)


def catch_and_return(payload: dict[str, Any]) -> str:
    """Catches JobTimeout and returns at once: it still ran past its timeout."""
    try:
        while True:
            pass
    except batchq.JobTimeout:
        return "caught"


@batchq.task(timeout="0.5s")
def spin_declared(payload: dict[str, Any]) -> None:
    """spin, with its task's own timeout."""
    _started(payload)
    while True:
        pass


@batchq.task(timeout="0.5s", max_errors=2)
def blocked_declared(payload: dict[str, Any]) -> None:
    """blocked, with its task's own timeout and two tries."""
    blocked(payload)


def alarm_handler_is(name: str) -> None:
    """Fails unless the SIGALRM handler in place is the function called ``name``."""
    handler = signal.getsignal(signal.SIGALRM)
    if getattr(handler, "__name__", repr(handler)) != name:
        raise AssertionError(f"the SIGALRM handler is {handler!r}")
