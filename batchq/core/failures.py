"""Failure fingerprints: one cause, one group, however many jobs it failed.

A fingerprint is a short hash of the exception's type, its message with the parts that vary from
job to job masked (numbers, hex ids, quoted values), and the innermost frame in the task's own
module (its function, not its line: a deploy that shifts lines keeps the group). gc-error groups
failed jobs by it and acts on a group.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import traceback
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import Any

from .stored import Row, stored_count, stored_seconds, stored_text, stored_time

FINGERPRINT_CHARS = 16
# The last_error of a job failed by its expiry (enqueue(expires=...)); its error class is
# batchq.errors.JobExpired (JobStore.expire_due).
EXPIRED_REASON = "expired"  # as jobs_expire writes it

_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
_HEX = re.compile(r"\b(?=[0-9a-fA-F-]*[0-9])(?=[0-9a-fA-F-]*[a-fA-F])[0-9a-fA-F-]{8,}\b|\b0x[0-9a-fA-F]+\b")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_BATCHQ_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # batchq/


def masked(message: str) -> str:
    """The message with what varies between jobs masked: quoted values, hex ids, numbers."""
    message = _QUOTED.sub("'…'", message)
    message = _HEX.sub("<hex>", message)
    return _NUMBER.sub("N", message)


def fingerprint_of(kind: str, message: str, frame: str = "") -> str:
    """The fingerprint of a failure of type ``kind`` with ``message`` (masked here) at ``frame``."""
    text = "\x1f".join((kind, masked(message), frame))
    return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:FINGERPRINT_CHARS]


def fingerprint(exc: BaseException, type_name: str, message: str, task: str | None) -> str:
    """A task's exception: its type, masked message and innermost frame in the task's module."""
    return fingerprint_of(type_name, _first_line(message), _task_frame(exc, task))


def timeout_fingerprint(task: str) -> str:
    """Every timed-out failure of a task, one group: stopped by JobTimeout or by the watchdog,
    wherever the task was at the time (the timeout is the cause, not that line)."""
    return fingerprint_of("JobTimeout", "timed out", task)


def fingerprint_of_text(last_error: str | None) -> str:
    """For a row without a fingerprint (written by hand, or before batchq recorded them): from
    the first line of its last error, 'Type: message' as the worker writes it."""
    kind, _, message = _first_line(last_error or "").partition(": ")
    return fingerprint_of(kind, message)


def _first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0]


def _task_frame(exc: BaseException, task: str | None) -> str:
    """'module.function' of the innermost frame in the task's module; failing that, of the
    innermost frame outside batchq (the file's name then); '' with no frames at all."""
    try:
        frames = traceback.extract_tb(exc.__traceback__)
    except Exception:
        return ""
    module_name = (task or "").partition(":")[0]
    module_file = getattr(sys.modules.get(module_name), "__file__", None)
    if module_file:
        for frame in reversed(frames):
            if os.path.abspath(frame.filename) == os.path.abspath(module_file):
                return f"{module_name}.{frame.name}"
    for frame in reversed(frames):
        if not os.path.abspath(frame.filename).startswith(_BATCHQ_DIR + os.sep):
            return f"{os.path.basename(frame.filename)}.{frame.name}"
    return ""


@dataclass(frozen=True)
class FailureGroup:
    """Failed jobs that share a fingerprint, as gc-error reports them."""

    fingerprint: str
    count: int
    queues: tuple[str, ...]
    tasks: tuple[str, ...]
    first_seen: datetime | str | None  # the earliest last failure among the group's jobs
    last_seen: datetime | str | None
    sample: str  # one job's last error, first line
    job_ids: tuple[int, ...]

    @property
    def failed_by(self) -> datetime | None:
        """The group's latest failure as a time, if it is one: acting on the group as listed means
        on its jobs that had failed by then (gc-error --failed-by), not on those failing since."""
        return self.last_seen if isinstance(self.last_seen, datetime) else None

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def group_failures(jobs: Iterable[FailedJob], per_queue: bool = False) -> list[FailureGroup]:
    """Groups of failed jobs by fingerprint, largest first (then most recent); ``per_queue``:
    one group per fingerprint and queue, so that acting on a group stays in its queue."""
    by_key: dict[tuple[str, str], list[FailedJob]] = {}
    for job in jobs:
        by_key.setdefault((job.fingerprint, job.queue if per_queue else ""), []).append(job)
    groups = [_group(fp, members) for (fp, _), members in by_key.items()]
    groups.sort(key=lambda g: (-g.count, g.fingerprint, g.queues))
    return groups


def _group(fp: str, jobs: list[FailedJob]) -> FailureGroup:
    seen = sorted((job.last_error_at for job in jobs if job.last_error_at is not None), key=str)
    return FailureGroup(
        fingerprint=fp,
        count=len(jobs),
        queues=tuple(sorted({job.queue for job in jobs})),
        tasks=tuple(sorted({job.task for job in jobs})),
        first_seen=seen[0] if seen else None,
        last_seen=seen[-1] if seen else None,
        sample=_first_line(jobs[-1].last_error or "")[:200],
        job_ids=tuple(job.id for job in jobs),
    )


def dropped_error(queue: str, max_length: int) -> str:
    """The last_error of a job a full drop_oldest queue failed to make room (batchq.policy.bounds)."""
    return (
        f"QueueFull: dropped to make room: queue {queue!r} holds at most {max_length} "
        "waiting jobs (overflow='drop_oldest')"
    )


def dropped_fingerprint(error: str) -> str:
    kind, _, message = error.partition(": ")
    return fingerprint_of(kind, message)


# Every dropped job's, whatever its queue and bound (both are masked): how gc-error tells a job
# dropped from a full queue from one out of tries.
DROPPED_FINGERPRINT = dropped_fingerprint(dropped_error("q", 1))


@dataclass(frozen=True)
class FailedJob:
    """A job out of tries, as gc-error lists it, or as it is after gc-error acted on it."""

    id: int
    queue: str
    task: str
    error_count: Any
    max_errors: Any
    last_error: str | None
    created_at: datetime | str | None
    concurrency_key: str | None = None
    fingerprint: str = ""  # the cause its failures share with others' (batchq.core.failures)
    last_error_at: datetime | str | None = None  # when it last failed (None before schema 007)
    status: str = "failed"
    error_count_before: int | None = None  # --requeue: the count it had (error_count is 0 now)
    unique_key: str | None = None
    # --requeue: not requeued, because this job (waiting or running) holds its unique key now
    key_held_by: int | None = None
    # --requeue: not requeued, because its queue is bounded, full and refuses (overflow reject)
    queue_full: str | None = None
    # Its last try as its worker measured it (batchq.jobs.history.Usage; None before schema 011).
    last_worker: str | None = None
    last_started_at: datetime | str | None = None
    last_wall_seconds: float | None = None
    last_cpu_seconds: float | None = None
    last_memory_peak_bytes: int | None = None
    last_memory_growth_bytes: int | None = None

    @classmethod
    def from_row(cls, row: Row) -> FailedJob:
        values = {name: row[name] for name in _FAILED_FIELDS if name in row}
        for name in ("queue", "task", "last_error"):  # SQLite: a row written by hand may hold a BLOB
            if values.get(name) is not None:
                values[name] = stored_text(values[name])
        stored = row.get("error_fingerprint")
        values["fingerprint"] = (
            stored_text(stored) if stored else fingerprint_of_text(values.get("last_error"))
        )
        values["last_error_at"] = stored_time(row.get("last_error_at"))  # SQLite's text: a time
        values["last_started_at"] = stored_time(row.get("last_started_at"))
        for name in ("last_wall_seconds", "last_cpu_seconds"):
            values[name] = stored_seconds(row.get(name))
        for name in ("last_memory_peak_bytes", "last_memory_growth_bytes"):
            values[name] = None if row.get(name) is None else stored_count(row[name])
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def dropped(self) -> bool:
        """Failed by a full drop_oldest queue while it waited, not by its own tries."""
        return self.fingerprint == DROPPED_FINGERPRINT


_FAILED_FIELDS = {f.name for f in fields(FailedJob)}
