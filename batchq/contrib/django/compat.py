"""Django's Tasks framework under its two names: ``django.tasks`` (Django 6) and the backport
``django_tasks`` (Django 5.2, Python 3.10+). The backend imports everything through here."""

from __future__ import annotations

from importlib.util import find_spec

if find_spec("django.tasks") is not None:  # pragma: no cover - Django 6 needs Python 3.12
    from django.tasks import TaskResultStatus, task_backends  # type: ignore[import-not-found]
    from django.tasks.backends.base import BaseTaskBackend  # type: ignore[import-not-found]
    from django.tasks.base import (  # type: ignore[import-not-found]
        Task,
        TaskContext,
        TaskError,
        TaskResult,
    )
    from django.tasks.exceptions import (  # type: ignore[import-not-found]
        InvalidTask,
        InvalidTaskBackend,
        TaskResultDoesNotExist,
    )
    from django.tasks.signals import (  # type: ignore[import-not-found]
        task_enqueued,
        task_finished,
        task_started,
    )
    from django.utils.json import normalize_json  # type: ignore[import-not-found]

    TASKS_LOGGER = "django.tasks"
else:
    from django_tasks import TaskResultStatus, task_backends
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import Task, TaskContext, TaskError, TaskResult
    from django_tasks.exceptions import InvalidTaskBackendError as InvalidTaskBackend
    from django_tasks.exceptions import InvalidTaskError as InvalidTask
    from django_tasks.exceptions import TaskResultDoesNotExist
    from django_tasks.signals import task_enqueued, task_finished, task_started
    from django_tasks.utils import normalize_json

    TASKS_LOGGER = "django_tasks"

__all__ = [
    "TASKS_LOGGER",
    "BaseTaskBackend",
    "InvalidTask",
    "InvalidTaskBackend",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultStatus",
    "normalize_json",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
