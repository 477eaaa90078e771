"""The shape of a job as the worker sees it: what a claim returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JOB_ID_RANGE = (1, 2**63 - 1)  # BIGINT / INTEGER ids on every backend


@dataclass(frozen=True, slots=True)
class Job:
    """A claimed job. ``claim_token`` fences every later write: once a sweep has taken the job
    back, a late finish with the old token changes nothing.

    Counts are kept as stored: SQLite lets a row written by hand hold any type in any column,
    so callers read them with ``stored_count``.
    """

    id: int
    queue: str
    task: str
    payload: bytes | None
    serializer: str
    priority: Any
    error_count: Any
    max_errors: Any
    # Seconds the job may run, as enqueued (None: the task's or the run's); read with
    # batchq.timeouts.stored_timeout, as a row written by hand may hold anything.
    timeout: Any = None
    claim_token: str = field(default="", repr=False)
    task_version: Any = None  # the task's version at enqueue; NULL (before schema 013) is 1
    backoff: Any = None  # seconds given to enqueue(backoff=...); NULL: the task's, else the run's

    @classmethod
    def from_row(cls, row: tuple[Any, ...], claim_token: str) -> Job:
        """A job from the first columns of a claim's result row, which every dialect's jobs_claim
        returns in this order: id, queue, task, payload, serializer, priority, error_count,
        max_errors, timeout_seconds, task_version, backoff."""
        job_id, queue, task, payload, serializer, priority, error_count, max_errors, timeout = row[:9]
        fields = (queue, task, payload, serializer, priority, error_count, max_errors, timeout)
        # task_version and backoff positionally: a claim builds a Job per row, and a frozen
        # dataclass's __init__ called with keywords cost 2.6 us against 2.2 (timeit, 3.11).
        return cls(job_id, *fields, claim_token, row[9], row[10])


@dataclass(frozen=True, slots=True)
class Claim:
    """What one claim transaction did: how many finished jobs it deleted, and what it claimed."""

    deleted: int = 0
    jobs: list[Job] = field(default_factory=list)
