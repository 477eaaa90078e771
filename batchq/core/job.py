"""The shape of a job as the worker sees it: what a claim returns."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from ..errors import ConfigError

JOB_ID_RANGE = (1, 2**63 - 1)  # BIGINT / INTEGER ids on every backend
# Keys every scheduled job's payload gets (batchq.jobs.schedules): the schedule's name and its slot.
SCHEDULE_KEY = "batchq_schedule"
SLOT_KEY = "batchq_slot"
# A kept result's JSON text, and its note, as JSON strings in the claim's array (ASCII, as the
# result's text already is).
_KEPT_JSON = json.JSONEncoder(ensure_ascii=True)


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
    # batchq.jobs.timeouts.stored_timeout, as a row written by hand may hold anything.
    timeout: Any = None
    claim_token: str = field(default="", repr=False)
    task_version: Any = None  # the task's version at enqueue; NULL (before schema 013) is 1
    backoff: Any = None  # seconds given to enqueue(backoff=...); NULL: the task's, else the run's
    keep_result: Any = None  # seconds its result is kept (batchq.jobs.results); NULL: as its queue says
    # Its rate key (batchq.policy.flow: enqueue(rate_key=..., rate=...)): None for most jobs. The
    # key's rate is read with the check, by id: a job without a key pays one NULL in its claim.
    rate_key: Any = None
    # A scheduled job's schedule and slot (its time, in the schedule's time zone), as its task sees
    # them through current_job(); None for other jobs (set by calling(), from the payload).
    schedule: str | None = None
    slot: datetime | None = None

    @property
    def attempt(self) -> int:
        """Which try this is: 1, then 2 after a failure (a snooze does not count). A count that
        is no whole number (a row written by hand) reads as 0 tries so far."""
        count = self.error_count
        return (count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else 0) + 1

    @classmethod
    def from_row(cls, row: tuple[Any, ...], claim_token: str) -> Job:
        """A job from the first columns of a claim's result row, which every dialect's jobs_claim
        returns in this order: id, queue, task, payload, serializer, priority, error_count,
        max_errors, timeout_seconds, task_version, backoff, keep_result, rate_key."""
        if cls is not Job:  # a subclass may have fields of its own: its own __init__
            return cls(
                row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8],
                claim_token, row[9], row[10], row[11], row[12],
            )  # fmt: skip
        # Job's frozen __init__ sets each of its 16 fields through object.__setattr__: ~25,000
        # instructions a job (valgrind), an eighth of a no-op job's in an SQLite batch drain.
        # A mutable object of the same slots, filled in, then made a Job: ~4,500.
        job: Any = _UnfrozenJob()
        job.id = row[0]
        job.queue = row[1]
        job.task = row[2]
        job.payload = row[3]
        job.serializer = row[4]
        job.priority = row[5]
        job.error_count = row[6]
        job.max_errors = row[7]
        job.timeout = row[8]
        job.claim_token = claim_token
        job.task_version = row[9]
        job.backoff = row[10]
        job.keep_result = row[11]
        job.rate_key = row[12]
        job.schedule = None
        job.slot = None
        job.__class__ = Job
        return job  # type: ignore[no-any-return]


class _UnfrozenJob:
    """Job's slots without its frozen __setattr__, for Job.from_row: the same layout, so CPython
    lets such an object become a Job (its __class__ assigned), frozen from then on."""

    __slots__ = Job.__slots__


@dataclass(frozen=True, slots=True)
class Claim:
    """What one claim transaction did: how many finished jobs it deleted, and what it claimed."""

    deleted: int = 0
    jobs: list[Job] = field(default_factory=list)


class Kept(NamedTuple):
    """A succeeded job to copy into the history, as the claim sends it (batchq.jobs.history.Meter.kept
    makes one): its id, its figures as integers (wall time in nanoseconds, CPU time in
    microseconds: the claim divides them back into seconds; None where unknown) and its result
    as stored (JSON text, or a note saying why not). A plain tuple, written out by hand: a
    frozen dataclass, a dict and the generic encoder's float reprs per job cost several
    microseconds a job (bench/RESULTS.md)."""

    id: int
    wall_ns: int
    cpu_us: int | None
    peak: int | None
    growth: int | None
    result: str | None = None  # JSON text
    note: str | None = None  # why the result is not stored as returned

    def entry(self) -> str:
        """Its entry in the claim's JSON array, written directly as text: [id, wall ns, CPU us,
        peak, growth], then result and note (JSON strings or null) when it returned something."""
        cpu, peak, growth = _json_int(self.cpu_us), _json_int(self.peak), _json_int(self.growth)
        head = f"[{self.id},{self.wall_ns},{cpu},{peak},{growth}"
        if self.result is None and self.note is None:
            return head + "]"
        return f"{head},{_json_text(self.result)},{_json_text(self.note)}]"

    def params(self) -> dict[str, Any]:
        """Its figures as the parameters of a claim that keeps this one job (jobs_claim_keep_one)."""
        return {
            "kept_id": self.id,
            "wall_ns": self.wall_ns,
            "cpu_us": self.cpu_us,
            "peak": self.peak,
            "growth": self.growth,
            "result": self.result,
            "note": self.note,
        }

    @property
    def size(self) -> int:
        """Roughly its share of the claim statement, in bytes (escaping may double the text)."""
        return 120 + 2 * (len(self.result or "") + len(self.note or ""))


def kept_document(kept: Sequence[Kept]) -> str:
    """The claim's %(kept)s parameter: one JSON array of every kept job's entry."""
    return f"[{','.join([entry.entry() for entry in kept])}]"


def _json_int(value: int | None) -> str:
    return "null" if value is None else str(int(value))


def _json_text(value: str | None) -> str:
    return "null" if value is None else _KEPT_JSON.encode(value)


def _with_slot(job: Job, payload: dict[str, Any]) -> Job:
    """The job with the schedule and slot its payload names; as it was when they cannot be read
    (a payload written by hand with those keys)."""
    schedule, slot = payload.get(SCHEDULE_KEY), payload[SLOT_KEY]
    if not isinstance(schedule, str) or not isinstance(slot, str):
        return job
    try:
        return replace(job, schedule=schedule, slot=datetime.fromisoformat(slot))
    except ValueError:
        return job


# The job a worker is calling, in the thread (and the asyncio.run) that calls it.
_current: ContextVar[Job | None] = ContextVar("batchq_current_job", default=None)


def current_job() -> Job | None:
    """The job whose task is running here, or None outside a worker's call: for a task that
    needs its job's id, its queue, which try this is (``attempt``: ``error_count`` + 1), or the
    slot a scheduled job runs for (``schedule``, ``slot``)."""
    return _current.get()


class calling:  # lower case: a context manager, named as the function it was
    """``job`` is the current job while the block runs; ``args``, the task's, tell a scheduled
    job's slot. A class, not a @contextmanager generator: entered once per job, and the
    generator's machinery was four Python calls more each time."""

    __slots__ = ("_job", "_token")

    def __init__(self, job: Job, args: tuple[Any, ...] = ()) -> None:
        if args and type(args[0]) is dict and SLOT_KEY in args[0]:  # one test for most jobs
            job = _with_slot(job, args[0])
        self._job = job

    def __enter__(self) -> None:
        self._token = _current.set(self._job)

    def __exit__(self, *exc_info: object) -> None:
        _current.reset(self._token)


class JobTransaction(Protocol):
    """The transaction that finishes a job, as its task asks for it
    (batchq.jobs.calls.FinishInTransaction)."""

    def connection(self) -> Any: ...


# The transaction a task declared @task(transactional=True) may ask for, while it is called.
_transaction: ContextVar[JobTransaction | None] = ContextVar("batchq_job_transaction", default=None)


def job_transaction() -> Any:
    """The DB-API connection of the transaction that will finish the job this task runs for: the
    worker's own connection, a transaction open on it. What the task writes on it commits with
    the job's end, or not at all: if the task raises, or its worker dies before the commit,
    neither happens and the job runs again. Do not commit, roll back or close it.

    Only in a task declared ``@task(transactional=True)``, called by a worker (ConfigError
    otherwise). The first call begins the transaction (SQLite: takes the database's write
    lock until the job's end) and checks that the job is still this worker's: ClaimLost if
    gc-processing has taken it back."""
    handle = _transaction.get()
    if handle is None:
        job = _current.get()
        where = "outside a worker's call" if job is None else f"in task {job.task!r}"
        raise ConfigError(
            f"job_transaction() {where}: only a task declared @task(transactional=True), "
            "called by a worker, has a job transaction"
        )
    return handle.connection()


@contextmanager
def transaction_for_call(handle: JobTransaction) -> Iterator[None]:
    token = _transaction.set(handle)
    try:
        yield
    finally:
        _transaction.reset(token)


def job_ids(jobs: Sequence[Job]) -> list[int]:
    return [job.id for job in jobs]


def done_params(done: Sequence[Job]) -> dict[str, Any]:
    """The finished jobs a claim deletes first: their token and ids (none: matches nothing)."""
    return {"done_token": done[0].claim_token if done else None, "done_ids": job_ids(done)}
