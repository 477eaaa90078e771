"""get_result(): a batchq job's state and kept outcome as Django's TaskResult.

A job of a Django Task keeps its outcome (enqueue(keep_result=...): OPTIONS KEEP_RESULT, a day
by default), so its result can be read from any process after it ended. Its status maps so:
waiting -> READY, running -> RUNNING, succeeded -> SUCCESSFUL, failed -> FAILED, cancelled ->
FAILED (Django's "unable to start"; no error); a job with no row and no kept result (never
enqueued, its record expired or pruned) -> TaskResultDoesNotExist, as is a job that is not a
Django Task's.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from ...backends import stored_text
from ...core.job import JOB_ID_RANGE
from .compat import TaskError, TaskResult, TaskResultDoesNotExist, TaskResultStatus
from .entry import DEFAULT_ALIAS
from .registry import discover, registered_task

STATUSES = {
    "waiting": TaskResultStatus.READY,
    "running": TaskResultStatus.RUNNING,
    "succeeded": TaskResultStatus.SUCCESSFUL,
    "failed": TaskResultStatus.FAILED,
    "cancelled": TaskResultStatus.FAILED,
}
NO_EXCEPTION_CLASS = "builtins.Exception"  # a failure that was no exception (its worker died)


def task_result(backend: Any, queue: Any, result_id: str) -> Any:
    job_id = _job_id(result_id)
    call = _call_of(queue, job_id)
    if call is None:
        raise TaskResultDoesNotExist(result_id)
    name, payload = call
    task = _task(backend, name)
    state = queue.result(job_id)
    status = STATUSES.get(state.status)
    if task is None or status is None:
        raise TaskResultDoesNotExist(result_id)
    alias = payload.get("backend", DEFAULT_ALIAS)
    attempts = max(state.attempts, 0)
    finished = status in (TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED)
    result = TaskResult(
        task=task.using(backend=alias) if alias != task.backend else task,
        id=str(job_id),
        status=status,
        enqueued_at=_time(state.enqueued_at),
        started_at=_time(state.started_at),
        finished_at=_time(state.finished_at) if finished else None,
        last_attempted_at=_time(state.started_at),
        args=payload.get("args", []),
        kwargs=payload.get("kwargs", {}),
        backend=alias,
        errors=_errors(state.error),
        worker_ids=[""] * (attempts - 1) + [state.worker or ""] if attempts else [],
    )
    if status == TaskResultStatus.SUCCESSFUL and isinstance(state.value, dict):
        object.__setattr__(result, "_return_value", state.value.get("value"))
    return result


def _job_id(result_id: Any) -> int:
    """A result id is a job id, as text: anything else names no result."""
    text = str(result_id)
    if not text.isdigit() or not JOB_ID_RANGE[0] <= int(text) <= JOB_ID_RANGE[1]:
        raise TaskResultDoesNotExist(result_id)
    return int(text)


def _call_of(queue: Any, job_id: int) -> tuple[str, dict[str, Any]] | None:
    """The job's task name and JSON payload (None: no such job, or not a Django Task's shape)."""
    row = queue.backend.stores.jobs.call_of(job_id)
    if row is None or stored_text(row["serializer"]) != "json" or row["payload"] is None:
        return None
    payload = row["payload"]
    try:
        data = json.loads(bytes(payload) if not isinstance(payload, str) else payload)
    except (ValueError, TypeError):
        return None
    return (stored_text(row["task"]), data) if isinstance(data, dict) else None


def _task(backend: Any, name: str) -> Any:
    """The Django Task a job names, found as a worker finds it: never imported from a row."""
    task = registered_task(name)
    if task is None:
        discover(backend.settings.task_modules)
        task = registered_task(name)
    return task


def _errors(error: Any) -> list[Any]:
    if error is None:
        return []
    return [
        TaskError(exception_class_path=error.exception_class or NO_EXCEPTION_CLASS, traceback=error.traceback)
    ]


def _time(value: datetime | None) -> datetime | None:
    """The database's UTC time, naive in TIME_ZONE when USE_TZ is off (as Django's own)."""
    if value is None or settings.USE_TZ:
        return value
    return timezone.make_naive(value, timezone.get_default_timezone())
