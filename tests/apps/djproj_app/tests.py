"""Django's own expectations of a Tasks backend, run with Django's test runner against the
batchq backend (`python -m django test djproj_app`, from tests/acceptance/test_django_tasks.py).

Adapted from the backend-generic tests of django-tasks (tests/tests/test_tasks.py, written for
its DummyBackend) and django-tasks-db (tests/tests.py, DatabaseBackendTestCase). Where batchq
differs by design it says so: enqueue joins the caller's transaction (django-tasks-db's does
not wait for it either, but writes on its own ORM connection the same way); a result read back
carries the database's clock for enqueued_at, so it is compared field by field without it.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.test import SimpleTestCase, TransactionTestCase
from django.utils import timezone

from batchq.contrib.django import BatchqBackend
from batchq.contrib.django.compat import InvalidTask as InvalidTaskError
from batchq.contrib.django.compat import (  # django.tasks (Django 6), or the backport
    TaskResultDoesNotExist,
    TaskResultMismatch,
    TaskResultStatus,
    default_task_backend,
    task,
    task_backends,
    task_enqueued,
)

from . import tasks as test_tasks


def without_enqueued_at(result: Any) -> dict[str, Any]:
    fields = dataclasses.asdict(result)
    fields.pop("enqueued_at")
    return fields


def run_worker() -> None:
    """`manage.py batchq run` on the test database (the settings name the other one)."""
    backend: Any = default_task_backend
    worker = [sys.executable, "-m", "django", "batchq", "run", "--url", backend.url]
    subprocess.run(worker, check=True)


class BackendDeclarationTests(SimpleTestCase):
    def test_using_correct_backend(self) -> None:
        self.assertEqual(default_task_backend, task_backends["default"])
        self.assertIsInstance(task_backends["default"], BatchqBackend)
        self.assertEqual(default_task_backend.alias, "default")

    def test_feature_flags(self) -> None:
        backend = default_task_backend
        self.assertTrue(backend.supports_defer)
        self.assertTrue(backend.supports_async_task)
        self.assertTrue(backend.supports_get_result)
        self.assertTrue(backend.supports_priority)

    def test_check(self) -> None:
        self.assertEqual(list(default_task_backend.check()), [])

    def test_using_priority(self) -> None:
        self.assertEqual(test_tasks.noop_task.using(priority=1).priority, 1)
        self.assertEqual(test_tasks.noop_task.priority, 0)

    def test_using_run_after(self) -> None:
        now = timezone.now()
        self.assertEqual(test_tasks.noop_task.using(run_after=now).run_after, now)

    def test_naive_datetime(self) -> None:
        with self.assertRaisesMessage(InvalidTaskError, "run_after must be an aware datetime"):
            test_tasks.noop_task.using(run_after=datetime.now())

    def test_invalid_priority(self) -> None:
        for priority in (-101, 101, 3.1):
            with (
                self.subTest(priority),
                self.assertRaisesMessage(InvalidTaskError, "priority must be a whole number"),
            ):
                test_tasks.noop_task.using(priority=priority)
        for priority in (-100, 0, 100):
            test_tasks.noop_task.using(priority=priority)

    def test_unknown_queue_name(self) -> None:
        with self.assertRaisesMessage(InvalidTaskError, "Queue 'queue-2' is not valid for backend"):
            test_tasks.noop_task.using(queue_name="queue-2")

    def test_invalid_function(self) -> None:
        for invalid_function in [any, self.test_invalid_function]:
            with (
                self.subTest(invalid_function),
                self.assertRaisesMessage(InvalidTaskError, "Task function must be defined at a module level"),
            ):
                task()(invalid_function)

    def test_takes_context_without_taking_context(self) -> None:
        with self.assertRaisesMessage(
            InvalidTaskError, "Task takes context but does not have a first argument"
        ):
            task(takes_context=True)(test_tasks.calculate_meaning_of_life.func)


class EnqueueTests(TransactionTestCase):
    def capture(self) -> list[tuple[Any, Any]]:
        received: list[tuple[Any, Any]] = []

        def on_enqueued(sender: Any, task_result: Any, **kwargs: Any) -> None:
            received.append((sender, task_result))

        task_enqueued.connect(on_enqueued, dispatch_uid="batchq-test", weak=False)
        self.addCleanup(task_enqueued.disconnect, on_enqueued, dispatch_uid="batchq-test")
        return received

    def assert_enqueued(self, result: Any, task: Any, args: list[Any], kwargs: dict[str, Any]) -> None:
        self.assertEqual(result.status, TaskResultStatus.READY)
        self.assertFalse(result.is_finished)
        self.assertIsNone(result.started_at)
        self.assertIsNone(result.last_attempted_at)
        self.assertIsNone(result.finished_at)
        with self.assertRaisesMessage(ValueError, "Task has not finished yet"):
            result.return_value  # noqa: B018
        self.assertEqual(result.task, task)
        self.assertEqual(result.args, args)
        self.assertEqual(result.kwargs, kwargs)
        self.assertEqual(result.attempts, 0)

    def test_enqueue_task(self) -> None:
        received = self.capture()
        for task_ in [test_tasks.noop_task, test_tasks.noop_task_async]:
            with self.subTest(task_):
                received.clear()
                result = task_.enqueue(1, two=3)
                self.assert_enqueued(result, task_, [1], {"two": 3})
                self.assertEqual(received, [(BatchqBackend, result)])

    async def test_enqueue_task_async(self) -> None:
        for task_ in [test_tasks.noop_task, test_tasks.noop_task_async]:
            with self.subTest(task_):
                result = await task_.aenqueue()
                self.assert_enqueued(result, task_, [], {})

    def test_enqueue_with_invalid_argument(self) -> None:
        with self.assertRaisesMessage(TypeError, "Unsupported type: <class 'datetime.datetime'>"):
            test_tasks.noop_task.enqueue(datetime.now())

    async def test_aenqueue_with_invalid_argument(self) -> None:
        with self.assertRaisesMessage(TypeError, "Unsupported type: <class 'datetime.datetime'>"):
            await test_tasks.noop_task.aenqueue(datetime.now())

    def test_get_result(self) -> None:
        result = default_task_backend.enqueue(test_tasks.noop_task, (), {})
        new_result = test_tasks.noop_task.get_result(result.id)
        self.assertEqual(without_enqueued_at(result), without_enqueued_at(new_result))
        self.assertIsNotNone(new_result.enqueued_at)

    async def test_get_result_async(self) -> None:
        result = await default_task_backend.aenqueue(test_tasks.noop_task, (), {})
        new_result = await test_tasks.noop_task.aget_result(result.id)
        self.assertEqual(without_enqueued_at(result), without_enqueued_at(new_result))

    async def test_get_missing_result(self) -> None:
        with self.assertRaises(TaskResultDoesNotExist):
            await test_tasks.noop_task.aget_result("123456789")
        for missing in ("123456789", "123", "abc", "not-a-uuid"):
            with self.assertRaises(TaskResultDoesNotExist):
                default_task_backend.get_result(missing)

    def test_get_incorrect_result(self) -> None:
        result = default_task_backend.enqueue(test_tasks.noop_task_async, (), {})
        with self.assertRaisesMessage(TaskResultMismatch, "Task does not match"):
            test_tasks.noop_task.get_result(result.id)

    async def test_get_incorrect_result_async(self) -> None:
        result = await default_task_backend.aenqueue(test_tasks.noop_task_async, (), {})
        with self.assertRaisesMessage(TaskResultMismatch, "Task does not match"):
            await test_tasks.noop_task.aget_result(result.id)

    def test_refresh_result(self) -> None:
        result = default_task_backend.enqueue(test_tasks.calculate_meaning_of_life, (), {})
        run_worker()
        self.assertEqual(result.status, TaskResultStatus.READY)
        result.refresh()
        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)
        self.assertTrue(result.is_finished)
        self.assertIsNotNone(result.started_at)
        self.assertIsNotNone(result.last_attempted_at)
        self.assertIsNotNone(result.finished_at)
        self.assertEqual(result.return_value, 42)
        self.assertEqual(result.attempts, 1)

    async def test_refresh_result_async(self) -> None:
        result = await default_task_backend.aenqueue(test_tasks.calculate_meaning_of_life, (), {})
        await self.async_run_worker()
        await result.arefresh()
        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(result.return_value, 42)

    async def async_run_worker(self) -> None:
        from asgiref.sync import sync_to_async

        await sync_to_async(run_worker)()

    def test_waits_for_transaction_commit(self) -> None:
        """The opposite of django-tasks-db's test_doesnt_wait_until_transaction_commit: the job
        is part of the caller's transaction, so no other connection sees it before the commit."""
        with transaction.atomic():
            result = test_tasks.noop_task.enqueue()
            self.assertIsNotNone(result.enqueued_at)
            if connection.vendor != "sqlite":  # SQLite: the other connection would wait for the lock
                with self.assertRaises(TaskResultDoesNotExist):
                    default_task_backend.get_result(result.id)
        self.assertEqual(default_task_backend.get_result(result.id).status, TaskResultStatus.READY)

    def test_rolled_back_enqueue_leaves_no_result(self) -> None:
        try:
            with transaction.atomic():
                result = test_tasks.noop_task.enqueue()
                raise RuntimeError("the view failed")
        except RuntimeError:
            pass
        with self.assertRaises(TaskResultDoesNotExist):
            default_task_backend.get_result(result.id)
