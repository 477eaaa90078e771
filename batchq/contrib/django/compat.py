"""Django's Tasks framework under its two names: ``django.tasks`` (Django 6) and the backport
``django_tasks`` (Django 5.2, Python 3.10+). The backend imports everything through here (and
code that must run on both, as batchq's own tests, can too)."""

from __future__ import annotations

from importlib.util import find_spec

if find_spec("django.tasks") is not None:  # pragma: no cover - Django 6 needs Python 3.12
    from django.tasks import (  # type: ignore[import-not-found]
        TaskResultStatus,
        default_task_backend,
        task,
        task_backends,
    )
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
        TaskResultMismatch,
    )
    from django.tasks.signals import (  # type: ignore[import-not-found]
        task_enqueued,
        task_finished,
        task_started,
    )
    from django.utils.json import normalize_json  # type: ignore[import-not-found]

    TASKS_LOGGER = "django.tasks"
    DUMMY_BACKEND = "django.tasks.backends.dummy.DummyBackend"
else:
    from django_tasks import TaskResultStatus, default_task_backend, task, task_backends
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import Task, TaskContext, TaskError, TaskResult
    from django_tasks.exceptions import InvalidTaskBackendError as InvalidTaskBackend
    from django_tasks.exceptions import InvalidTaskError as InvalidTask
    from django_tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch
    from django_tasks.signals import task_enqueued, task_finished, task_started
    from django_tasks.utils import normalize_json

    TASKS_LOGGER = "django_tasks"
    DUMMY_BACKEND = "django_tasks.backends.dummy.DummyBackend"

__all__ = [
    "DUMMY_BACKEND",
    "TASKS_LOGGER",
    "BaseTaskBackend",
    "InvalidTask",
    "InvalidTaskBackend",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultMismatch",
    "TaskResultStatus",
    "default_task_backend",
    "normalize_json",
    "task",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
