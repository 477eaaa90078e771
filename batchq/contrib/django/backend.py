"""BatchqBackend: Django's Tasks framework (``django.tasks``, or the ``django_tasks`` backport)
on a batchq queue.

``task.enqueue(...)`` writes one batchq job on the Django connection of the backend's
DATABASE, so inside ``transaction.atomic()`` the job commits or rolls back with the block;
``get_result(id)`` reads the job's state and kept result (batchq.jobs.results). Workers are
``manage.py batchq run`` (batchq.contrib.django.registry says what they may call).
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from django.conf import settings as django_settings
from django.core import checks
from django.db import connections
from django.utils import timezone

from ...core.config import check_queue_name
from ...errors import ConfigError
from ...queue import Queue
from . import results
from .after import current_parents
from .compat import BaseTaskBackend, InvalidTask, TaskResult, TaskResultStatus, normalize_json, task_enqueued
from .entry import DEFAULT_ALIAS
from .registry import ENTRY_MODULE, register
from .settings import read_options, url_of_database


class BatchqBackend(BaseTaskBackend):
    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True
    batchq_backend = True  # what a worker checks of the alias a job names (entry.DjangoTask)

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.settings = read_options(alias, self.queues, self.options)
        self._queues: dict[str, Queue] = {}  # by URL: the test runner renames the database
        self._lock = threading.Lock()

    # -- where the queue is ----------------------------------------------------------------

    @property
    def url(self) -> str:
        """The batchq URL of this backend's queue, as a worker reaches it."""
        if self.settings.url is not None:
            return self.settings.url
        database = self.settings.database
        assert database is not None
        return url_of_database(database, connections[database].settings_dict)

    def queue(self) -> Queue:
        """A batchq Queue on this backend's database, allowed to name registered Django Tasks."""
        url = self.url
        with self._lock:
            queue = self._queues.get(url)
            if queue is None:
                queue = self._queues[url] = Queue(url, task_modules=[ENTRY_MODULE])
        return queue

    def _connection(self) -> Any:
        """The Django connection enqueue writes on (None: a URL of its own, batchq's connection)."""
        if self.settings.database is None:
            return None
        return connections[self.settings.database]

    # -- the contract ----------------------------------------------------------------------

    def validate_task(self, task: Any) -> None:
        super().validate_task(task)
        try:
            check_queue_name(task.queue_name)
        except ConfigError as exc:
            raise InvalidTask(str(exc)) from None

    def enqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        self.validate_task(task)
        # TypeError for what JSON cannot carry ("Unsupported type: ..."), as Django's own backends.
        payload: dict[str, Any] = normalize_json({"args": args, "kwargs": kwargs})
        if self.alias != DEFAULT_ALIAS:
            payload["backend"] = self.alias
        job_id = self._write(task, payload)
        result = TaskResult(
            task=task,
            id=str(job_id),
            status=TaskResultStatus.READY,
            enqueued_at=timezone.now(),
            started_at=None,
            finished_at=None,
            last_attempted_at=None,
            args=payload["args"],
            kwargs=payload["kwargs"],
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        task_enqueued.send(type(self), task_result=result)
        return result

    def _write(self, task: Any, payload: dict[str, Any]) -> int:
        options: dict[str, Any] = {
            "queue": task.queue_name,
            "priority": task.priority,
            "run_at": _run_after(task.run_after),  # an aware datetime, None: now
            "max_errors": self.settings.max_errors,
            "keep_result": self.settings.keep_result,
        }
        parents = current_parents()  # batchq.contrib.django.after: Django's API has no place for it
        if parents is not None:
            options["after"] = parents
        # The alias's Django connection: inside atomic() the job joins the block (batchq.backends.appconn).
        options["conn"] = self._connection()
        return self.queue().enqueue(register(task), payload, **options)

    def get_result(self, result_id: str) -> Any:
        queue = self.queue()
        try:
            return results.task_result(self, queue, result_id)
        finally:
            # batchq's own connection lives no longer than the call, as Django's own last no longer
            # than a request by default: nothing is left open that would keep the test runner
            # from dropping its database, or hold a server session per idle thread.
            queue.close()

    def check(self, **kwargs: Any) -> list[Any]:
        messages = list(super().check(**kwargs))
        try:
            self.url  # noqa: B018 - an in-memory SQLite or unsupported database says so here
        except Exception as exc:
            messages.append(checks.Error(str(exc), obj=f"TASKS[{self.alias!r}]", id="batchq.E001"))
        return messages


def _run_after(run_after: datetime | None) -> datetime | None:
    """An aware instant for batchq: with USE_TZ off, Django's naive times are TIME_ZONE's."""
    if run_after is None or timezone.is_aware(run_after):
        return run_after
    if django_settings.USE_TZ:  # validate_task refused it already; say so again rather than guess
        raise InvalidTask("run_after must be an aware datetime.")
    return timezone.make_aware(run_after, timezone.get_default_timezone())


__all__ = ["BatchqBackend"]
