"""The sweeps cron runs: jobs stuck in processing, and jobs out of tries."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime
from functools import partial
from typing import Any

from ..backends import Backend, DuplicateKey, Row, TransientError, stored_count
from ..core.config import format_duration
from ..core.failures import FailedJob, FailureGroup, fingerprint_of, group_failures
from ..errors import BackendError, BackendUnavailable, ConfigError
from ..jobs.dependencies import in_transaction
from ..jobs.dependencies import repair as repair_dependants
from ..jobs.heartbeat import DEFAULT_HEARTBEAT_SECONDS
from ..jobs.writing import UNIQUE_ATTEMPTS
from ..ops.registry import prune_gone, registered_heartbeat
from ..policy.bounds import fitting, full_reason, make_room, take_turn
from ..queue import Queue

DEFAULT_OLDER_THAN_SECONDS = 3600.0
# --ghost-after must be at least this many of the workers' heartbeats: between two pings a live
# worker's session sits idle up to one heartbeat (and a beat can come late), so a shorter wait
# takes a healthy worker for a ghost and runs its job twice.
GHOST_AFTER_HEARTBEATS = 2


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


_FIELDS = {cls: {f.name for f in fields(cls)} for cls in (StuckJob,)}


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


def check_ghost_after(ghost_after: float | None, heartbeat: float = DEFAULT_HEARTBEAT_SECONDS) -> None:
    """Refuse a ghost_after that a live worker beating every ``heartbeat`` seconds (its `run
    --heartbeat`) cannot satisfy, before the sweep touches anything."""
    if ghost_after is None:
        return
    if not 0 < heartbeat < math.inf:
        raise ConfigError(
            "--ghost-after needs the workers' heartbeat: with `run --heartbeat 0` (off) a live "
            "worker's session sits idle for its whole job; drop --ghost-after, or give the workers "
            "a heartbeat and pass it as --worker-heartbeat"
        )
    least = GHOST_AFTER_HEARTBEATS * heartbeat
    if not ghost_after >= least:  # nan too
        raise ConfigError(
            f"--ghost-after {_seconds(ghost_after)} is too short: a live worker's session sits "
            f"idle up to a heartbeat ({_seconds(heartbeat)}, `run --heartbeat`; --worker-heartbeat "
            f"here) between pings, so its job would be put back while it runs: use --ghost-after "
            f"{_seconds(least)} or more"
        )


def _seconds(value: float) -> str:
    """0.6s, 45s, 1m00s: a heartbeat below a second is shown as it is."""
    return f"{value:g}s" if value < 60 else format_duration(value)


def gc_processing(
    queue: Queue,
    older_than: float = DEFAULT_OLDER_THAN_SECONDS,
    ghost_after: float | None = None,
    heartbeat: float = DEFAULT_HEARTBEAT_SECONDS,
) -> ProcessingReport:
    """Put back jobs whose worker is gone; report, never steal, long runners of live workers.

    A worker is gone when its liveness lock is free (MySQL GET_LOCK, PostgreSQL
    advisory lock) or its process no longer exists (SQLite, same host). With ``ghost_after``,
    also when the session holding its lock has sat idle longer than that: a working worker's
    heartbeat never lets it, so the worker is gone behind a connection the server still keeps.
    A row written by hand (no owner, no claim token, no processing_at, a count at its column's
    top) is handled like the others; a row that still cannot be put back is reported, and the
    sweep goes on. ``heartbeat`` is the workers' `run --heartbeat`: ``ghost_after`` must be
    several of them (check_ghost_after), or ConfigError is raised before anything is read.
    Waiting jobs past their expiry are failed as 'expired' (JobStore.expire_due), unreported.
    """
    check_ghost_after(ghost_after, heartbeat)
    backend = queue.backend
    store = backend.stores.jobs
    report = ProcessingReport()
    alive: dict[str, tuple[bool | None, str]] = {}
    for row in store.processing():
        owner = row["locked_by"] or ""
        if owner not in alive:
            alive[owner] = _owner_alive(backend, owner, ghost_after)
        worker_alive, why_gone = alive[owner]
        if worker_alive is False:
            _requeue(backend, row, report, why_gone)
        elif row["age_seconds"] is None or float(row["age_seconds"]) >= older_than:
            # An unknown age (processing_at NULL) is reported too.
            report.long_running.append(StuckJob.from_row(row, "long_running", worker_alive=worker_alive))
    report.unrunnable = [StuckJob.from_row(row, "unrunnable") for row in store.unrunnable()]
    # dependants of parents that ended without succeeding (batchq.jobs.dependencies)
    repair_dependants(backend)
    prune_gone(backend)  # registry rows of workers gone for a while: nothing a human must do
    # Waiting jobs past their expiry, failed as 'expired' as the workers' tick does: here too, so
    # that they show as failures (gc-error, explain, results) while no worker runs; quiet, as
    # the failures are gc-error's to report.
    store.expire_due()
    backend.liveness.prune()  # and their leases
    return report


def _requeue(backend: Backend, row: Row, report: ProcessingReport, why_gone: str) -> None:
    """Put back one job of a dead worker; a statement that fails for this row is reported."""
    error = f"{why_gone}; put back by gc-processing"
    owner = row["locked_by"] or ""
    # One group for every job lost this way, whichever worker it was.
    fingerprint = fingerprint_of("WorkerGone", error.replace(owner, "<worker>") if owner else error)
    try:
        # The token fences the race with the worker's own finish and with a second sweep.
        if backend.stores.jobs.requeue_abandoned(row["id"], row["claim_token"], error, fingerprint) == 1:
            failed = stored_count(row["error_count"]) + 1 >= stored_count(row["max_errors"])
            if failed:  # its waiting dependants fail with it (else repair() would, below)
                in_transaction(backend, partial(backend.stores.dependencies.fail_dependants, [row["id"]]))
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
    try:
        alive = liveness.is_alive(owner)
    except TransientError:  # a lock wait or deadlock, e.g. on a Galera node donating its state
        return None, gone  # cannot be told now: its jobs stay as they are until the next sweep
    if not alive or ghost_after is None:
        return alive, gone
    idle_after = _ghost_idle_after(backend, owner, ghost_after)
    ghost = None if idle_after is None else liveness.ghost_session(owner, idle_after)
    if ghost is None:
        return alive, gone
    session, idle = ghost
    ended = "ended" if liveness.end_session(session) else "not permitted to end it"
    return False, (
        f"worker {owner} is gone: its database session {session} sat idle {idle:.0f}s holding its "
        f"lock, past --ghost-after (a ghost session, {ended})"
    )


def _ghost_idle_after(backend: Backend, owner: str, ghost_after: float) -> float | None:
    """How long the owner's session must sit idle to be taken for a ghost: ghost_after, but
    never less than two of the heartbeats the worker registered (a worker beating slower than
    --worker-heartbeat said is alive between its beats); None: never, as the worker does not
    ping its session (`run --heartbeat 0`) and sits idle for a whole job."""
    beat = registered_heartbeat(backend, owner)
    if beat is None:  # not registered, or by an older batchq: as the operator said
        return ghost_after
    if beat <= 0:
        return None
    return max(ghost_after, GHOST_AFTER_HEARTBEATS * beat)


def gc_error(
    queue: Queue,
    action: str | None = None,
    queues: Iterable[str] = (),
    ids: Iterable[int] = (),
    groups: Iterable[str] = (),
    failed_by: datetime | None = None,
) -> list[FailedJob]:
    """List failed jobs (filtered by queue, id and failure group, each filter given meaning 'one
    of these'; and by ``failed_by``: only jobs whose last failure came no later, so that acting
    on a group as it was listed leaves alone the jobs that failed since); ``action`` 'requeue'
    or 'delete' acts on them.

    Returns the jobs listed, or with an action the jobs it acted on; requeued ones as they are
    now (ready, or blocked for a slot of their concurrency key; no errors), with the count they
    had in ``error_count_before``. A failed job no longer holds its unique key: one whose key
    another job has taken since is not requeued, and is returned still failed, with that job's
    id in ``key_held_by`` (requeue it once that job is done, or delete it).
    """
    wanted_queues, wanted_ids, wanted_groups = set(queues), set(ids), set(groups)
    jobs = [
        job
        for job in map(FailedJob.from_row, queue.backend.stores.jobs.failed())
        if (not wanted_queues or job.queue in wanted_queues)
        and (not wanted_ids or job.id in wanted_ids)
        and (not wanted_groups or job.fingerprint in wanted_groups)
        and (failed_by is None or _failed_by(job, failed_by))
    ]
    if action is None:
        return jobs
    backend = queue.backend
    if action == "requeue":
        acted = [requeued for job in jobs if (requeued := requeue_failed(backend, job)) is not None]
    else:
        acted = [job for job in jobs if backend.stores.jobs.delete_failed(job.id) == 1]
    repair_dependants(backend)  # a deleted parent's waiting dependants fail (batchq.jobs.dependencies)
    return acted


def _failed_by(job: FailedJob, bound: datetime) -> bool:
    """Whether the job last failed no later than ``bound`` (a time written by hand, that is no
    time, is not known to: the job is left alone)."""
    return isinstance(job.last_error_at, datetime) and job.last_error_at <= bound


def requeue_failed(backend: Backend, job: FailedJob) -> FailedJob | None:
    """The job requeued, or still failed because its unique key is held or its bounded queue
    is full (reject); None if it is gone."""
    for attempt in range(UNIQUE_ATTEMPTS):
        try:
            outcome = backend.retrying(partial(_requeue_in_bound, backend, job))
            if isinstance(outcome, str):
                return replace(job, queue_full=outcome)
            return _requeued(job) if outcome == 1 else None
        except DuplicateKey:
            key = job.unique_key
            holder = backend.stores.jobs.unique_holder(key) if key is not None else None
            if holder is not None:
                return replace(job, key_held_by=holder)
            if attempt == UNIQUE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _requeue_in_bound(backend: Backend, job: FailedJob) -> int | str:
    """Requeue one failed job as an enqueue writes one (batchq.policy.bounds): in its bounded queue's
    turn, refused when full under reject (why, as text), room made under drop_oldest; else the
    rows the requeue changed (0: gone)."""
    with backend.transaction():
        bound = take_turn(backend, job.queue, None)
        if bound is not None and not fitting(backend, job.queue, bound, 1, None):
            return full_reason(job.queue, bound)
        if bound is not None:  # drop_oldest: the oldest other waiting jobs, before it waits again
            make_room(backend, job.queue, bound, 1, None)
        return backend.stores.jobs.requeue_failed(job.id)


def failure_groups(queue: Queue, queues: Iterable[str] = (), per_queue: bool = False) -> list[FailureGroup]:
    """The failed jobs (of ``queues``, or all) grouped by the cause of their failures, largest
    group first; ``per_queue``: a cause's jobs in each queue are a group of their own."""
    return group_failures(gc_error(queue, queues=queues), per_queue)


def _requeued(job: FailedJob) -> FailedJob:
    status = "ready" if job.concurrency_key is None else "blocked"
    return replace(job, status=status, error_count=0, error_count_before=stored_count(job.error_count))
