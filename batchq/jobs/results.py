"""Job results (issue 30): a job's state and, once it ended, its outcome, by id.

A job that asks for it (``enqueue(keep_result=...)``, ``@task(keep_result=...)``, or any job of
a queue with a ``keep_for``) is copied into ``batchq_history`` when it ends, in the transaction
that ends it (batchq.jobs.history): its return value as JSON, or its error. A kept result is one
history record with an end of life (``expires_at``, finished + keep_result); ``Queue.prune``
sweeps the expired ones. While a job is still in the job table its row says where it is:
waiting, running, or failed for good (failed jobs stay there for gc-error).

``read_result`` reads both in one statement (one snapshot); ``wait_for_result`` re-reads until
the job has ended, woken on PostgreSQL by the NOTIFY of a record written or a job failed for
good, elsewhere (and for a job that keeps nothing) by polling with a short backoff.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from ..backends import Backend, Row, stored_count, stored_text, stored_time
from ..core.job import JOB_ID_RANGE
from ..core.serializers import loads
from ..errors import ConfigError, SignatureError
from .history import PICKLED_NOTE

# What Queue.result says of a job. waiting: ready, delayed or blocked; unknown: no job and no
# kept result (never existed, its result not kept, or expired).
STATUSES = ("waiting", "running", "succeeded", "failed", "cancelled", "unknown")
FINAL = frozenset({"succeeded", "failed", "cancelled", "unknown"})
_FROM_JOB = {
    "ready": "waiting",
    "scheduled": "waiting",
    "blocked": "waiting",
    "processing": "running",
    "failed": "failed",
}
_FROM_RECORD = {"succeeded": "succeeded", "failed": "failed", "cancelled": "cancelled"}
# wait= polls at first every FIRST_POLL seconds, doubling up to MAX_POLL (on PostgreSQL a NOTIFY
# wakes it sooner; polling remains for jobs that keep nothing: their end notifies nobody).
FIRST_POLL_SECONDS = 0.05
MAX_POLL_SECONDS = 1.0
PRUNE_BATCH = 1000
# last_error is "Name: message\n" then the last frames as traceback.format_tb writes them.
_FRAMES = '\n  File "'


@dataclass(frozen=True)
class JobError:
    """Why a job failed: its last try's exception, as the worker recorded it.

    ``exception_class`` is the class's path (``builtins.ValueError``); "" when the failure was
    no exception (the task returned False, its worker died, its payload did not match its
    queue's type) or came from a worker older than schema 020 (then only ``message`` is sure).
    ``traceback`` is the last five frames, in Python's format, cut at 4,000 characters."""

    exception_class: str
    message: str
    traceback: str


@dataclass(frozen=True)
class JobResult:
    """A job's state (``status``, one of STATUSES) and, once it ended, its outcome.

    Times are the database server's, UTC-aware; ``started_at`` is its last try's start;
    ``attempts`` counts its tries, the running one included; ``worker`` is who runs it (or ran
    its last try), ``host:pid:...``. ``value`` is what the task returned, decoded from JSON;
    ``note`` says when it is not that value itself (not JSON: its repr; too large: None)."""

    id: int
    status: str
    value: Any = None
    error: JobError | None = None
    enqueued_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    attempts: int = 0
    worker: str | None = None
    note: str | None = None

    @property
    def finished(self) -> bool:
        """True once waiting longer cannot change it: succeeded, failed, cancelled or unknown."""
        return self.status in FINAL

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: times as ISO 8601 text."""
        data = asdict(self)
        for name in ("enqueued_at", "started_at", "finished_at"):
            if data[name] is not None:
                data[name] = data[name].isoformat()
        return data


def check_job_id(job_id: Any) -> int:
    if isinstance(job_id, bool) or not isinstance(job_id, int):
        raise ConfigError(f"bad job id {job_id!r}: use a whole number")
    return int(job_id)


def check_wait(wait: Any) -> float:
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not wait >= 0:
        raise ConfigError(f"bad wait {wait!r}: use a number of seconds, 0 or more, or None")
    return float(wait)


def read_result(backend: Backend, job_id: int, secret: bytes | None = None) -> JobResult:
    """The job's state now: its row if it is still in the job table, else its kept record
    (``secret``: to verify and unpickle a result kept pickled, history.PICKLED_NOTE)."""
    job_id = check_job_id(job_id)
    if not JOB_ID_RANGE[0] <= job_id <= JOB_ID_RANGE[1]:
        return JobResult(job_id, "unknown")
    rows = backend.stores.jobs.result_rows(job_id)
    row = next((r for r in rows if r["source"] == "job"), rows[0] if rows else None)
    return JobResult(job_id, "unknown") if row is None else _from_row(job_id, row, secret)


def wait_for_result(
    backend: Backend, job_id: int, wait: float | None, secret: bytes | None = None
) -> JobResult:
    """read_result, again until the job has ended or ``wait`` seconds have passed (then the
    state it is in: never raises for the time)."""
    job_id = check_job_id(job_id)
    if wait is None:
        return read_result(backend, job_id, secret)
    check_wait(wait)
    deadline = time.monotonic() + wait
    result = read_result(backend, job_id, secret)
    if result.finished or wait == 0:
        return result
    pause = FIRST_POLL_SECONDS
    with backend.result_notes() as sleep:  # PostgreSQL: LISTEN before the read that decides
        while True:
            result = read_result(backend, job_id, secret)
            remaining = deadline - time.monotonic()
            if result.finished or remaining <= 0:
                return result
            sleep(job_id, min(pause, remaining))
            pause = min(pause * 2, MAX_POLL_SECONDS)


def prune_expired(backend: Backend, batch: int = PRUNE_BATCH) -> int:
    """Delete the records whose keep_result ran out, in bounded statements (as history.prune)."""
    total = 0
    while True:
        deleted = backend.stores.jobs.prune_expired_results(batch)
        total += deleted
        if deleted < batch:
            return total


# -- reading rows (any row: also one written by hand) ----------------------------------------


def _from_row(job_id: int, row: Row, secret: bytes | None) -> JobResult:
    source, state = row["source"], _text(row["state"])
    status = (_FROM_JOB if source == "job" else _FROM_RECORD).get(state or "", "unknown")
    attempts = stored_count(row["attempts"]) + (1 if status == "running" else 0)
    value, note = None, _text(row["result_note"])
    if status == "succeeded" and row["result"] is not None:
        value, unreadable = _json(row["result"])
        note = note or unreadable
        if note == PICKLED_NOTE:
            value, note = _unpickled(value, secret)
    error = _error(_text(row["error"]), _text(row["error_class"])) if status == "failed" else None
    return JobResult(
        id=job_id,
        status=status,
        value=value,
        error=error,
        enqueued_at=_time(row["enqueued_at"]),
        started_at=_time(row["started_at"]),
        finished_at=_time(row["finished_at"]),
        attempts=max(attempts, 0),
        worker=_text(row["worker"]),
        note=note,
    )


def _text(value: Any) -> str | None:
    return None if value is None else stored_text(value)


def _time(value: Any) -> datetime | None:
    found = stored_time(value)
    return found if isinstance(found, datetime) else None  # text that is no time: none known


def _json(value: Any) -> tuple[Any, str | None]:
    text = stored_text(value)
    try:
        return json.loads(text), None
    except (ValueError, RecursionError):
        return text, "the stored result is not valid JSON: its text is given"


def _unpickled(stored: Any, secret: bytes | None) -> tuple[Any, str | None]:
    """A result kept pickled: verified with the secret, then unpickled (as payloads are); one
    that cannot be (no secret, a wrong signature, not base64, a pickle that fails) is None, with
    a note saying why."""
    if not secret:
        return None, "kept pickled and signed: give Queue(secret=...) (or BATCHQ_SECRET) to read it"
    try:
        data = base64.b64decode(str(stored), validate=True)
        return loads(data, "pickle", secret), None
    except SignatureError:
        return None, "kept pickled, with a missing or wrong signature: refused, never unpickled"
    except (ValueError, TypeError):
        return None, "kept pickled, but its text is not base64: not read"
    except Exception as exc:  # the pickle itself fails: a class gone from the code, say
        return None, f"kept pickled, and unpickling it failed: {type(exc).__name__}: {exc}"[:255]


def _error(text: str | None, class_path: str | None) -> JobError:
    """A JobError from last_error ("Name: message\\n<frames>") and the class path, if known."""
    text = text or ""
    head, _, frames = text.partition(_FRAMES)
    frames = f'  File "{frames}' if frames else ""
    head = head.rstrip("\n")
    name = (class_path or "").rpartition(".")[2]
    message = head[len(name) + 2 :] if name and head.startswith(f"{name}: ") else head
    traceback = f"Traceback (most recent call last):\n{frames}{head}\n" if frames else head
    return JobError(class_path or "", message, traceback)
