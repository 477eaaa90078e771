"""The sweeps cron runs: jobs stuck in processing, and jobs out of tries."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial

from .backends import Backend, Row, stored_count
from .errors import BackendError, BackendUnavailable
from .queue import Queue

DEFAULT_OLDER_THAN_SECONDS = 3600.0


@dataclass
class ProcessingReport:
    requeued: list[Row] = field(default_factory=list)  # their worker is gone: put back
    long_running: list[Row] = field(default_factory=list)  # worker alive, over the threshold
    # Rows the sweep could not put back (job["error"] says why): for a human; the sweep goes on.
    unhandled: list[Row] = field(default_factory=list)
    # Rows written by hand that no worker will ever claim (odd status or priority): for a human.
    unrunnable: list[Row] = field(default_factory=list)


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
    for job in backend.fetchall("processing_jobs"):
        owner = job["locked_by"] or ""
        if owner not in alive:
            alive[owner] = _owner_alive(backend, owner, ghost_after)
        job["worker_alive"], why_gone = alive[owner]
        if job["worker_alive"] is False:
            _requeue(queue, job, report, why_gone)
        elif job["age_seconds"] is None or float(job["age_seconds"]) >= older_than:
            report.long_running.append(job)  # an unknown age (processing_at NULL) is reported too
    report.unrunnable = backend.fetchall("unrunnable_jobs")
    return report


def _requeue(queue: Queue, job: Row, report: ProcessingReport, why_gone: str) -> None:
    """Put back one job of a dead worker; a statement that fails for this row is reported."""
    backend = queue.backend
    params = {"id": job["id"], "token": job["claim_token"], "error": f"{why_gone}; put back by gc-processing"}
    try:
        # The token fences the race with the worker's own finish and with a second sweep.
        if backend.retrying(partial(backend.execute, "requeue_abandoned", params)) == 1:
            job["failed"] = stored_count(job["error_count"]) + 1 >= stored_count(job["max_errors"])
            report.requeued.append(job)
    except BackendUnavailable:
        raise
    except BackendError as exc:
        job["error"] = str(exc)
        report.unhandled.append(job)


def _owner_alive(backend: Backend, owner: str, ghost_after: float | None) -> tuple[bool | None, str]:
    """Is the worker alive (None: cannot be told), and if it is not, why."""
    gone = f"worker {owner or '(none recorded)'} died while running the job"
    if not owner:
        return False, gone
    alive = backend.is_alive(owner)
    if not alive or ghost_after is None:
        return alive, gone
    ghost = backend.ghost_session(owner, ghost_after)
    if ghost is None:
        return alive, gone
    session, idle = ghost
    ended = "ended" if backend.end_session(session) else "not permitted to end it"
    return False, (
        f"worker {owner} is gone: its database session {session} sat idle {idle:.0f}s holding its "
        f"lock, past --ghost-after (a ghost session, {ended})"
    )


def gc_error(
    queue: Queue,
    action: str | None = None,
    queues: Iterable[str] = (),
    ids: Iterable[int] = (),
) -> list[Row]:
    """List failed jobs (filtered by queue and id); ``action`` 'requeue' or 'delete' acts on them.

    Returns the jobs listed, or with an action the jobs it acted on; requeued ones as they are
    now (ready, no errors), with the count they had in ``error_count_before``.
    """
    wanted_queues, wanted_ids = set(queues), set(ids)
    jobs = [
        job
        for job in queue.failed_jobs()
        if (not wanted_queues or job["queue"] in wanted_queues)
        and (not wanted_ids or int(job["id"]) in wanted_ids)
    ]
    if action is None:
        return jobs
    query = {"requeue": "requeue_failed", "delete": "delete_failed"}[action]
    backend = queue.backend
    done = [job for job in jobs if backend.retrying(partial(backend.execute, query, {"id": job["id"]})) == 1]
    return [_requeued(job) for job in done] if action == "requeue" else done


def _requeued(job: Row) -> Row:
    return {**job, "status": "ready", "error_count": 0, "error_count_before": job["error_count"]}
