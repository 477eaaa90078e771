"""The dashboard's actions: POSTs that the Guard lets through only with a signed-in session and
its CSRF token (posts.check_action), then redirect back (the page reloads with a note)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from flask import Blueprint, redirect, request

from ..core.config import check_queue_name, counted, parse_utc_time
from ..core.job import JOB_ID_RANGE
from ..errors import ConfigError
from ..jobs.dependencies import repair as repair_dependants
from ..ops.explain import why_not_cancelled
from ..ops.registry import request_stop
from ..runtime.sweeps import FailedJob, gc_error, requeue_failed
from .context import current
from .params import integer
from .posts import back, check_action

blueprint = Blueprint("actions", __name__)


def action(path: str) -> Callable[[Callable[[], str]], Callable[[], Any]]:
    """A POST that acts once the Guard lets it, then goes back with its note."""

    def register(act: Callable[[], str]) -> Callable[[], Any]:
        def handler() -> Any:
            check_action()
            note = act()
            return redirect(back("/", note=note, sig=current().guard.note_signature(note)), 303)

        blueprint.add_url_rule(path, act.__name__, handler, methods=["POST"])
        return handler

    return register


@action("/actions/pause")
def pause() -> str:
    name = check_queue_name(request.form.get("queue", ""))
    current().queue.pause(name)
    return f"paused queue {name}"


@action("/actions/resume")
def resume() -> str:
    name = check_queue_name(request.form.get("queue", ""))
    current().queue.resume(name)
    return f"resumed queue {name}"


@action("/actions/requeue-group")
def requeue_group() -> str:
    group, name, failed_by = _group_in_queue()
    done = gc_error(current().queue, "requeue", queues=[name], groups=[group], failed_by=failed_by)
    held = [job for job in done if job.key_held_by is not None]
    full = [job for job in done if job.queue_full is not None]
    requeued = counted(len(done) - len(held) - len(full), "job")
    note = f"requeued {requeued} of failure group {group} in queue {name}"
    whose = "its" if len(held) == 1 else "their"
    note += f"; {counted(len(held), 'job')} left failed: {whose} unique key is held" if held else ""
    return note + (
        f"; {counted(len(full), 'job')} left failed: the queue is full (overflow reject)" if full else ""
    )


@action("/actions/delete-group")
def delete_group() -> str:
    group, name, failed_by = _group_in_queue()
    deleted = len(gc_error(current().queue, "delete", queues=[name], groups=[group], failed_by=failed_by))
    return f"deleted {counted(deleted, 'failed job')} of group {group} in queue {name}"


def _group_in_queue() -> tuple[str, str, datetime | None]:
    """A failure group's row on the Failures page is one cause in one queue, as it was when the
    page was drawn: its cause and queue are needed, and its latest failure bounds the action, so
    that it never reaches the cause's jobs in other queues nor those that failed since."""
    group, name = request.form.get("fingerprint", ""), request.form.get("queue", "")
    if not group or not name:
        raise ConfigError("which failure group, in which queue? act from the Failures page's rows")
    failed_by = request.form.get("failed_by", "")
    # the queue as stored: rows written by hand may hold any name
    return group, name, parse_utc_time(failed_by, "failed_by") if failed_by else None


@action("/actions/stop-worker")
def stop_worker() -> str:
    name = request.form.get("name", "")
    if request_stop(current().backend, name=name):
        return f"asked worker {name} to finish its job and exit"
    return f"worker {name} was not asked: it is no longer running (it exited, or died)"


@action("/actions/cancel")
def cancel() -> str:
    job_id = _job_id(request.form.get("id", ""))
    if current().queue.cancel(job_id):
        return f"cancelled job {job_id}"
    return f"job {job_id} was not cancelled: {why_not_cancelled(current().queue.explain(job_id))}"


def _job_id(text: str) -> int:
    return integer({"id": text}, "id", JOB_ID_RANGE)


@action("/actions/retry")
def retry() -> str:
    """Retry one job now: a failed one gets a fresh set of tries (as `batchq gc-error --requeue
    --id` requeues it: in its bounded queue's turn, its unique key checked; read by its id, not
    with every failed job), a delayed one is made due now. The page's state is sent with it, so a job that
    changed state since the page was drawn is left alone."""
    job_id, shown = _job_id(request.form.get("id", "")), request.form.get("state", "")
    board = current()
    if shown == "failed":
        row = board.backend.stores.jobs.failed_one(job_id)
        job = None if row is None else requeue_failed(board.backend, FailedJob.from_row(row))
        if job is None:
            return f"job {job_id} was not retried: it is no longer failed"
        if job.key_held_by is not None:
            return f"job {job_id} was not retried: its unique key is held by job {job.key_held_by}"
        if job.queue_full is not None:
            return f"job {job_id} was not retried: {job.queue_full}"
        return f"retried job {job_id} now: {job.status}, its tries reset"
    if shown == "scheduled":
        if board.backend.stores.jobs.run_now(job_id):
            return f"job {job_id} is due now"
        return f"job {job_id} was not made due: it is no longer delayed"
    raise ConfigError(f"bad state {shown[:40]!r}: retry a failed or a scheduled (delayed) job, from its page")


@action("/actions/delete")
def delete() -> str:
    """Delete one failed job (a waiting one is cancelled with /actions/cancel). Its dependants'
    edges go with it, as gc-error's delete drops them: a retried dependant runs without it."""
    job_id = _job_id(request.form.get("id", ""))
    backend = current().backend
    if backend.stores.jobs.delete_failed(job_id) == 1:
        repair_dependants(backend)
        return f"deleted failed job {job_id}"
    return f"job {job_id} was not deleted: it is no longer failed"
