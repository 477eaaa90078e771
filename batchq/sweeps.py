"""The sweeps cron runs: jobs stuck in processing, and jobs out of tries."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime
from functools import partial
from typing import Any

from .backends import Backend, DuplicateKey, Row, stored_count, stored_seconds, stored_text, stored_time
from .errors import BackendError, BackendUnavailable
from .failures import FailureGroup, fingerprint_of, fingerprint_of_text, group_failures
from .queue import UNIQUE_ATTEMPTS, Queue
from .registry import prune_gone

DEFAULT_OLDER_THAN_SECONDS = 3600.0


@dataclass(frozen=True)
class StuckJob:
    """A claimed job gc-processing put back or reports, or a row no worker will claim."""

    id: int
    queue: str
    task: str
    state: str  # requeued | long_running | unhandled | unrunnable
    locked_by: str | None = None
    claim_token: str | None = None
    age_seconds: float | None = None  # None: processing_at unknown (a row written by hand)
    error_count: Any = None  # as stored: a row written by hand may hold anything
    max_errors: Any = None
    worker_alive: bool | None = None  # None: cannot be told (another host's SQLite worker)
    failed: bool = False  # requeued out of tries: it is 'failed' now
    error: str | None = None  # unhandled: why it could not be put back
    status: Any = None  # unrunnable: the odd status and priority that keep it from a worker
    priority: Any = None

    @classmethod
    def from_row(cls, row: Row, state: str, **found: Any) -> StuckJob:
        return cls(state=state, **{name: row[name] for name in _FIELDS[cls] if name in row}, **found)

    def as_dict(self) -> dict[str, Any]:
        """For --json and hooks: every field but the claim token (a worker's fencing secret)."""
        return {k: v for k, v in asdict(self).items() if k != "claim_token"}


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
    fingerprint: str = ""  # the cause its failures share with others' (batchq.failures)
    last_error_at: datetime | str | None = None  # when it last failed (None before schema 007)
    status: str = "failed"
    error_count_before: int | None = None  # --requeue: the count it had (error_count is 0 now)
    unique_key: str | None = None
    # --requeue: not requeued, because this job (waiting or running) holds its unique key now
    key_held_by: int | None = None
    # Its last try as its worker measured it (batchq.history.Usage; None before schema 011).
    last_worker: str | None = None
    last_started_at: datetime | str | None = None
    last_wall_seconds: float | None = None
    last_cpu_seconds: float | None = None
    last_memory_peak_bytes: int | None = None
    last_memory_growth_bytes: int | None = None

    @classmethod
    def from_row(cls, row: Row) -> FailedJob:
        values = {name: row[name] for name in _FIELDS[cls] if name in row}
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


_FIELDS = {cls: {f.name for f in fields(cls)} for cls in (StuckJob, FailedJob)}


@dataclass
class ProcessingReport:
    requeued: list[StuckJob] = field(default_factory=list)  # their worker is gone: put back
    long_running: list[StuckJob] = field(default_factory=list)  # worker alive, over the threshold
    # Jobs the sweep could not put back (error says why): for a human; the sweep goes on.
    unhandled: list[StuckJob] = field(default_factory=list)
    # Rows written by hand that no worker will ever claim (odd status or priority): for a human.
    unrunnable: list[StuckJob] = field(default_factory=list)

    @property
    def jobs(self) -> list[StuckJob]:
        return self.requeued + self.long_running + self.unhandled + self.unrunnable


def gc_processing(
    queue: Queue, older_than: float = DEFAULT_OLDER_THAN_SECONDS, ghost_after: float | None = None
) -> ProcessingReport:
    """Put back jobs whose worker is gone; report, never steal, long runners of live workers.

    A worker is gone when its liveness lock is free (MySQL GET_LOCK, PostgreSQL
    advisory lock) or its process no longer exists (SQLite, same host). With ``ghost_after``,
    also when the session holding its lock has sat idle longer than that: a working worker's
    heartbeat never lets it, so the worker is gone behind a connection the server still keeps.
    A row written by hand (no owner, no claim token, no processing_at, a count at its column's
    top) is handled like the others; a row that still cannot be put back is reported, and the
    sweep goes on.
    """
    backend = queue.backend
    report = ProcessingReport()
    alive: dict[str, tuple[bool | None, str]] = {}
    for row in backend.fetchall("jobs_processing"):
        owner = row["locked_by"] or ""
        if owner not in alive:
            alive[owner] = _owner_alive(backend, owner, ghost_after)
        worker_alive, why_gone = alive[owner]
        if worker_alive is False:
            _requeue(backend, row, report, why_gone)
        elif row["age_seconds"] is None or float(row["age_seconds"]) >= older_than:
            # An unknown age (processing_at NULL) is reported too.
            report.long_running.append(StuckJob.from_row(row, "long_running", worker_alive=worker_alive))
    report.unrunnable = [StuckJob.from_row(row, "unrunnable") for row in backend.fetchall("jobs_unrunnable")]
    prune_gone(backend)  # registry rows of workers gone for a while: nothing a human must do
    backend.liveness.prune()  # and their leases
    return report


def _requeue(backend: Backend, row: Row, report: ProcessingReport, why_gone: str) -> None:
    """Put back one job of a dead worker; a statement that fails for this row is reported."""
    error = f"{why_gone}; put back by gc-processing"
    owner = row["locked_by"] or ""
    params = {
        "id": row["id"],
        "token": row["claim_token"],
        "error": error,
        # One group for every job lost this way, whichever worker it was.
        "fingerprint": fingerprint_of("WorkerGone", error.replace(owner, "<worker>") if owner else error),
    }
    try:
        # The token fences the race with the worker's own finish and with a second sweep.
        if backend.retrying(partial(backend.execute, "job_requeue_abandoned", params)) == 1:
            failed = stored_count(row["error_count"]) + 1 >= stored_count(row["max_errors"])
            report.requeued.append(StuckJob.from_row(row, "requeued", worker_alive=False, failed=failed))
    except BackendUnavailable:
        raise
    except BackendError as exc:
        report.unhandled.append(StuckJob.from_row(row, "unhandled", worker_alive=False, error=str(exc)))


def _owner_alive(backend: Backend, owner: str, ghost_after: float | None) -> tuple[bool | None, str]:
    """Is the worker alive (None: cannot be told), and if it is not, why."""
    gone = f"worker {owner or '(none recorded)'} died while running the job"
    if not owner:
        return False, gone
    liveness = backend.liveness
    alive = liveness.is_alive(owner)
    if not alive or ghost_after is None:
        return alive, gone
    ghost = liveness.ghost_session(owner, ghost_after)
    if ghost is None:
        return alive, gone
    session, idle = ghost
    ended = "ended" if liveness.end_session(session) else "not permitted to end it"
    return False, (
        f"worker {owner} is gone: its database session {session} sat idle {idle:.0f}s holding its "
        f"lock, past --ghost-after (a ghost session, {ended})"
    )


def gc_error(
    queue: Queue,
    action: str | None = None,
    queues: Iterable[str] = (),
    ids: Iterable[int] = (),
    groups: Iterable[str] = (),
) -> list[FailedJob]:
    """List failed jobs (filtered by queue, id and failure group, each filter given meaning 'one
    of these'); ``action`` 'requeue' or 'delete' acts on them.

    Returns the jobs listed, or with an action the jobs it acted on; requeued ones as they are
    now (ready, or blocked for a slot of their concurrency key; no errors), with the count they
    had in ``error_count_before``. A failed job no longer holds its unique key: one whose key
    another job has taken since is not requeued, and is returned still failed, with that job's
    id in ``key_held_by`` (requeue it once that job is done, or delete it).
    """
    wanted_queues, wanted_ids, wanted_groups = set(queues), set(ids), set(groups)
    jobs = [
        job
        for job in map(FailedJob.from_row, queue.backend.fetchall("jobs_failed"))
        if (not wanted_queues or job.queue in wanted_queues)
        and (not wanted_ids or job.id in wanted_ids)
        and (not wanted_groups or job.fingerprint in wanted_groups)
    ]
    if action is None:
        return jobs
    backend = queue.backend
    if action == "requeue":
        return [requeued for job in jobs if (requeued := _requeue_failed(backend, job)) is not None]
    return [job for job in jobs if _execute(backend, "job_delete_failed", job.id) == 1]


def _execute(backend: Backend, query: str, job_id: int) -> int:
    return backend.retrying(partial(backend.execute, query, {"id": job_id}))


def _requeue_failed(backend: Backend, job: FailedJob) -> FailedJob | None:
    """The job requeued, or still failed because its unique key is held; None if it is gone."""
    for attempt in range(UNIQUE_ATTEMPTS):
        try:
            return _requeued(job) if _execute(backend, "job_requeue_failed", job.id) == 1 else None
        except DuplicateKey:
            holder = backend.unique_holder(job.unique_key) if job.unique_key is not None else None
            if holder is not None:
                return replace(job, key_held_by=holder)
            if attempt == UNIQUE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def failure_groups(queue: Queue, queues: Iterable[str] = ()) -> list[FailureGroup]:
    """The failed jobs (of ``queues``, or all) grouped by the cause of their failures, largest
    group first."""
    return group_failures(gc_error(queue, queues=queues))


def _requeued(job: FailedJob) -> FailedJob:
    status = "ready" if job.concurrency_key is None else "blocked"
    return replace(job, status=status, error_count=0, error_count_before=stored_count(job.error_count))
