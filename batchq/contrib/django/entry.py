"""The one callable a batchq worker may run for Django: ``DjangoTask``, a registered Django Task
as batchq calls it (batchq.contrib.django.registry says which Tasks are registered, and why).

This module is on the worker's allow-list (``--task-modules``), so that batchq's resolver accepts
the registered names, whose callables are DjangoTask objects defined here. A row may name any
public function or class method of an allowed module: this module therefore defines no public
function and DjangoTask no public method (tests/unit/test_django_entry.py holds it to that).
The payload is ``{"args": [...], "kwargs": {...}}``, plus ``"backend"`` (the alias) when it is
not "default"; the task's return value is kept as ``{"value": ...}``.
"""

from __future__ import annotations

import traceback
from typing import Any

from django.db import close_old_connections
from django.utils import timezone

from ...core.job import current_job
from ...errors import PayloadError
from ...jobs.control import Snooze as _Snooze  # private: this module is on the allow-list
from .compat import (
    TaskContext,
    TaskError,
    TaskResult,
    TaskResultStatus,
    normalize_json,
    task_finished,
    task_started,
)

DEFAULT_ALIAS = "default"


class DjangoTask:
    """A Django Task as batchq calls it, with the job's payload."""

    def __init__(self, task: Any) -> None:
        self._task = task
        # batchq stores and checks a callable by module:qualname: this class's, for every Task.
        self.__qualname__ = type(self).__qualname__

    def __call__(self, payload: Any) -> Any:
        args, kwargs, alias = _call_of(payload)
        task = self._task.using(backend=alias) if alias != self._task.backend else self._task
        backend_type = type(task.get_backend())
        if not getattr(backend_type, "batchq_backend", False):  # a row naming another framework's
            raise PayloadError(f"the job names task backend {alias!r}, which is not a batchq backend")
        result = _running_result(task, args, kwargs, alias)
        close_old_connections()  # as a request does: no connection broken by the last job
        try:
            task_started.send(sender=backend_type, task_result=result)
            if task.takes_context:
                value = task.call(TaskContext(task_result=result), *args, **kwargs)
            else:
                value = task.call(*args, **kwargs)
            value = normalize_json(value)  # a value JSON cannot carry fails the task, as Django's do
        except _Snooze:
            raise  # put back for later, not finished: the worker snoozes the job (batchq.jobs.control)
        except BaseException as exc:
            _finished(result, backend_type, TaskResultStatus.FAILED, exc)
            raise
        finally:
            close_old_connections()
        _finished(result, backend_type, TaskResultStatus.SUCCESSFUL, None, value)
        # Kept as {"value": ...}: a task may return False, which batchq would count as a failure.
        return {"value": value}


def _call_of(payload: Any) -> tuple[list[Any], dict[str, Any], str]:
    """(args, kwargs, backend alias) of a payload; a row written by hand may hold anything."""
    shaped = isinstance(payload, dict)
    args = payload.get("args", []) if shaped else None
    kwargs = payload.get("kwargs", {}) if shaped else None
    alias = payload.get("backend", DEFAULT_ALIAS) if shaped else None
    if not isinstance(args, list) or not isinstance(kwargs, dict) or not isinstance(alias, str):
        raise PayloadError(
            f"a Django task's payload is {{'args': [...], 'kwargs': {{...}}}}, not {payload!r}"
        )
    return args, kwargs, alias


def _running_result(task: Any, args: list[Any], kwargs: dict[str, Any], alias: str) -> Any:
    """The TaskResult a task's context and Django's signals see while it runs."""
    job = current_job()
    now = timezone.now()
    attempts = 1 if job is None else _count(job.error_count) + 1
    return TaskResult(
        task=task,
        id=str(job.id) if job is not None else "",
        status=TaskResultStatus.RUNNING,
        enqueued_at=None,
        started_at=now,
        finished_at=None,
        last_attempted_at=now,
        args=args,
        kwargs=kwargs,
        backend=alias,
        errors=[],
        worker_ids=[""] * attempts,
    )


def _finished(result: Any, sender: type, status: Any, exc: BaseException | None, value: Any = None) -> None:
    object.__setattr__(result, "status", status)
    object.__setattr__(result, "finished_at", timezone.now())
    if exc is not None:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        result.errors.append(TaskError(exception_class_path=_class_path(exc), traceback=text))
    else:
        object.__setattr__(result, "_return_value", value)
    task_finished.send(sender=sender, task_result=result)


def _class_path(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__qualname__}"


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
