"""What a job's task string may call, through enqueue() and an in-process worker on every backend
(issue 9: items 1, 7, 9). `tests/apps/hostile_app` is a small application with the shapes an
attacker looks for (see tests/support/tasks.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from batchq import Queue, TaskError, TaskNotAllowed
from batchq.worker import RunOptions, Worker
from tests.support.db import job_rows
from tests.support.tasks import HOSTILE, hostile_payload

# -- item 1: a task string resolves only to what an allowed module defines --------------------


@pytest.mark.parametrize("task_name, kind, reason", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_task_refused_at_enqueue(
    app_queue: Queue, tmp_path: Path, task_name: str, kind: str | None, reason: str
) -> None:
    marker = tmp_path / "marker"
    with pytest.raises(TaskError) as info:
        app_queue.enqueue(task_name, hostile_payload(kind, marker))
    assert reason in str(info.value)
    assert job_rows(app_queue) == []
    assert not marker.exists()
    assert "hostile_app.side_effect" not in sys.modules  # refused without importing it


def test_every_allowed_form_still_runs(app_queue: Queue, tmp_path: Path) -> None:
    forms = {
        "hostile_app.jobs:touch": "touch",
        "hostile_app.jobs:Mailer.send": "default",  # a plain method: an instance made with no arguments
        "hostile_app.jobs:Mailer.static_send": "static",
        "hostile_app.jobs:Mailer.class_send": "class Mailer",
        "hostile_app.jobs:mailer.send": "configured",
    }
    for index, task_name in enumerate(forms):
        app_queue.enqueue(task_name, str(tmp_path / f"out{index}"))
    Worker(app_queue, RunOptions()).run()
    assert job_rows(app_queue) == []
    assert [(tmp_path / f"out{i}").read_text() for i in range(len(forms))] == list(forms.values())


# -- item 7: async def tasks run to completion ---------------------------------------------------


def test_async_tasks_are_run(app_queue: Queue, tmp_path: Path) -> None:
    import hostile_app.jobs as jobs

    app_queue.enqueue(jobs.async_touch, str(tmp_path / "a"))
    app_queue.enqueue("hostile_app.jobs:returns_coroutine", str(tmp_path / "b"))
    app_queue.enqueue("hostile_app.jobs:async_false")
    worker = Worker(app_queue, RunOptions())
    worker.run()
    assert (tmp_path / "a").read_text() == "async" and (tmp_path / "b").read_text() == "async"
    [row] = job_rows(app_queue)
    assert row["task"] == "hostile_app.jobs:async_false" and row["last_error"] == "the task returned False"


def test_generator_functions_are_refused(app_queue: Queue, tmp_path: Path) -> None:
    import hostile_app.jobs as jobs

    with pytest.raises(TaskError, match="generator function"):
        app_queue.enqueue(jobs.generator_touch, str(tmp_path / "g"))
    assert job_rows(app_queue) == []


# -- item 8: a bound method of a module-level object keeps its object -------------------------------


def test_bound_method_of_a_module_level_object_is_stored_by_that_object(
    app_queue: Queue, tmp_path: Path
) -> None:
    import hostile_app.jobs as jobs

    app_queue.enqueue(jobs.mailer.send, str(tmp_path / "out"))
    app_queue.enqueue(jobs.Mailer.class_send, str(tmp_path / "cls"))
    assert [row["task"] for row in job_rows(app_queue)] == [
        "hostile_app.jobs:mailer.send",
        "hostile_app.jobs:Mailer.class_send",
    ]
    Worker(app_queue, RunOptions()).run()
    assert (tmp_path / "out").read_text() == "configured"  # not a fresh Mailer() with its defaults
    assert (tmp_path / "cls").read_text() == "class Mailer"


def test_bound_method_of_an_unreachable_object_is_refused(app_queue: Queue, tmp_path: Path) -> None:
    import hostile_app.jobs as jobs

    with pytest.raises(TaskError, match="no module-level name"):
        app_queue.enqueue(jobs.Mailer("elsewhere").send, str(tmp_path / "out"))
    assert job_rows(app_queue) == []


def test_enqueue_refuses_a_registered_name_workers_would_not_find(db_url: str) -> None:
    import reg_app.tasks  # noqa: F401 - registers reg_touch in this process

    queue = Queue(db_url, task_modules=["reg_app"])
    try:
        with pytest.raises(TaskNotAllowed, match="'reg_app.tasks'"):
            queue.enqueue("reg_touch", "x")
        assert job_rows(queue) == []
        listed = Queue(db_url, task_modules=["reg_app.tasks"])
        assert listed.enqueue("reg_touch", "x") > 0
        listed.close()
    finally:
        queue.close()
