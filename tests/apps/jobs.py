"""Tasks the tests enqueue. Workers import this module as `jobs` (BATCHQ_TASK_MODULES=jobs)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import batchq
from batchq.backends import create_backend
from tests.support.queries import query

_ledger = threading.local()  # a connection per thread: `run --concurrency` runs jobs in several


def record(payload: dict[str, Any]) -> None:
    """Write the job's number into test_ledger, on a connection of its own (autocommit); then, if
    the payload names a gate file, hold until it exists, and sleep for its "sleep" seconds."""
    backend = getattr(_ledger, "backend", None)
    if backend is None:
        backend = _ledger.backend = create_backend(os.environ["BATCHQ_URL"])
    with backend.errors():
        cur = backend.conn.cursor()
        cur.execute(query(backend.dialect, "ledger_insert"), {"n": payload["n"], "pid": os.getpid()})
        cur.close()
    gate = payload.get("gate")
    while gate and not os.path.exists(gate):
        time.sleep(0.01)
    pause = payload.get("sleep")
    if pause:
        time.sleep(pause)


def record_slot(payload: dict[str, Any]) -> None:
    """A scheduled job: write its slot (seconds since the epoch) into test_ledger."""
    from datetime import datetime

    record({"n": int(datetime.fromisoformat(payload["batchq_slot"]).timestamp())})


def record_tagged_slot(payload: dict[str, Any]) -> None:
    """A job of schedule sK: write (slot mod 100000) * 10 + K into test_ledger, so that the
    slots of several schedules stay apart (the column is an INT)."""
    from datetime import datetime

    slot = int(datetime.fromisoformat(payload["batchq_slot"]).timestamp())
    record({"n": slot % 100_000 * 10 + int(payload["batchq_schedule"][1:])})


def slow(payload: dict[str, Any]) -> None:
    """Touch payload['started'], sleep payload['seconds'] (or less, once the file
    payload['until'] exists), then touch payload['done']."""
    Path(payload["started"]).write_text(str(os.getpid()))
    deadline = time.monotonic() + payload["seconds"]
    until = Path(payload["until"]) if payload.get("until") else None
    while time.monotonic() < deadline and not (until and until.exists()):
        time.sleep(min(0.05, max(deadline - time.monotonic(), 0)))
    if payload.get("done"):
        Path(payload["done"]).write_text(str(os.getpid()))


def noop(payload: Any = None) -> None:
    return None


def fail(payload: Any = None) -> None:
    raise ValueError(f"boom: {payload!r}")


@batchq.task(max_errors=2, backoff="1m")
def fail_with_policy(payload: Any = None) -> None:
    """A task with its own retry policy: 2 tries, a minute's backoff."""
    raise ValueError(f"policy: {payload!r}")


def return_false(payload: Any = None) -> bool:
    return False


def echo(payload: Any) -> Any:
    """Return the payload (a job's result); a dict's 'sleep' seconds first."""
    if isinstance(payload, dict) and payload.get("sleep"):
        time.sleep(payload["sleep"])
    return payload


def touch(payload: str) -> None:
    Path(payload).write_text("ran")


@batchq.task(name="registered_touch")
def registered_touch(payload: str) -> None:
    Path(payload).write_text("registered")


class Mailer:
    @staticmethod
    def static_touch(path: str) -> None:
        Path(path).write_text("static")

    @classmethod
    def class_touch(cls, path: str) -> None:
        Path(path).write_text(f"class {cls.__name__}")

    def touch(self, path: str) -> None:
        Path(path).write_text(f"instance {type(self).__name__}")


class NeedsArgs:
    def __init__(self, required: int) -> None:
        self.required = required

    def touch(self, path: str) -> None:
        Path(path).write_text("never")


mailer = Mailer()
not_callable = 42


def crash_once(payload: dict[str, Any]) -> None:
    """First run: mark payload['started'] and hang (to be SIGKILLed). Later runs: record and return."""
    started = Path(payload["started"])
    if not started.exists():
        started.write_text(str(os.getpid()))
        time.sleep(payload.get("hang", 60))
    record(payload)


def save_hook(jobs: list[dict[str, Any]]) -> None:
    """A --hook for gc commands: writes the affected job ids to $HOOK_OUT."""
    Path(os.environ["HOOK_OUT"]).write_text(",".join(str(job["id"]) for job in jobs))


def record_then_hang_once(payload: dict[str, Any]) -> None:
    """Record, then on the first run only hang (to be SIGKILLed after the job's effect)."""
    record(payload)
    started = Path(payload["started"])
    if not started.exists():
        started.write_text(str(os.getpid()))
        time.sleep(60)


def kill_own_worker(payload: Any = None) -> None:
    """A poison job: SIGKILLs the worker that runs it, every time."""
    os.kill(os.getpid(), 9)


def raise_unicode(payload: Any = None) -> None:
    raise RuntimeError("💥 données \udcff invalid")


def stamp(path: str) -> None:
    """Write time.time() at the job's start (wake-up latency); the rename makes it appear whole."""
    started = time.time()
    Path(path + ".tmp").write_text(repr(started))
    os.replace(path + ".tmp", path)


def fail_with_nul(payload: Any = None) -> None:
    raise ValueError("bad byte \x00 in the message")
