"""The dashboard's actions: POSTs that the Guard lets through only with a signed-in session and
its CSRF token (posts.check_action), then redirect back (the page reloads with a note)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Blueprint, redirect, request

from ..config import check_queue_name
from ..errors import ConfigError
from ..registry import request_stop
from ..sweeps import gc_error
from .context import current
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
    group = request.form.get("fingerprint", "")
    done = gc_error(current().queue, "requeue", groups=[group])
    held = [job for job in done if job.key_held_by is not None]
    full = [job for job in done if job.queue_full is not None]
    note = f"requeued {len(done) - len(held) - len(full)} jobs of failure group {group}"
    note += f"; {len(held)} left failed: their unique key is held" if held else ""
    return note + (f"; {len(full)} left failed: their queue is full (overflow reject)" if full else "")


@action("/actions/delete-group")
def delete_group() -> str:
    group = request.form.get("fingerprint", "")
    return f"deleted {len(gc_error(current().queue, 'delete', groups=[group]))} failed jobs of group {group}"


@action("/actions/stop-worker")
def stop_worker() -> str:
    name = request.form.get("name", "")
    if request_stop(current().backend, name=name):
        return f"asked worker {name} to finish its job and exit"
    return f"worker {name} is not registered: it has exited"


@action("/actions/cancel")
def cancel() -> str:
    job_id = _job_id(request.form.get("id", ""))
    if current().queue.cancel(job_id):
        return f"cancelled job {job_id}"
    return f"job {job_id} was not cancelled: it is running, or gone"


def _job_id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"bad job id {text!r}: use a whole number") from None
