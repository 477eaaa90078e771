"""What a job's task string may call, through enqueue() and an in-process worker on every backend
(issue 9: items 1, 7, 9). `tests/apps/hostile_app` is a small application with the shapes an
attacker looks for (see tests/support/tasks.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from batchq import Queue, TaskError, TaskNotAllowed
from batchq.runtime.worker import RunOptions, Worker
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


# -- issue 24: a producer needs no allow-list for a function it hands over; workers still do ------


def test_a_producer_without_a_list_enqueues_a_function_and_only_allowing_workers_run_it(
    db_url: str, tmp_path: Path
) -> None:
    """The quickstart's producer sets no BATCHQ_TASK_MODULES: enqueue(function) stores its
    module:qualname; a worker that does not allow the module refuses the row (the rule is the
    worker's), including an in-process worker on that very Queue (the producer's trust in the
    function it was handed never reaches the resolver rows are resolved with)."""
    import hostile_app.jobs as jobs

    producer = Queue(db_url, task_modules=[])
    try:
        out = tmp_path / "out"
        job_id = producer.enqueue(jobs.touch, str(out))
        producer.enqueue(jobs.mailer.send, str(tmp_path / "mailer"))
        producer.enqueue(jobs.Mailer.class_send, str(tmp_path / "cls"))
        assert [row["task"] for row in job_rows(producer)] == [
            "hostile_app.jobs:touch",
            "hostile_app.jobs:mailer.send",
            "hostile_app.jobs:Mailer.class_send",
        ]
        Worker(producer, RunOptions()).run()  # allows nothing: refuses every row
        rows = job_rows(producer)
        assert [row["error_count"] for row in rows] == [1, 1, 1]
        refused = "is not in BATCHQ_TASK_MODULES"
        assert all(row["last_error"].startswith("TaskNotAllowed: ") for row in rows), rows
        assert all(refused in row["last_error"] for row in rows), rows
        assert not out.exists() and not (tmp_path / "mailer").exists()
        assert producer.cancel(job_id)
    finally:
        producer.close()


def test_a_worker_that_allows_the_module_runs_what_a_listless_producer_enqueued(
    db_url: str, tmp_path: Path
) -> None:
    import hostile_app.jobs as jobs

    producer, worker_queue = Queue(db_url, task_modules=[]), Queue(db_url, task_modules=["hostile_app.jobs"])
    try:
        producer.enqueue(jobs.touch, str(tmp_path / "out"))
        producer.enqueue(jobs.mailer.send, str(tmp_path / "mailer"))
        Worker(worker_queue, RunOptions()).run()
        assert job_rows(worker_queue) == []
        assert (tmp_path / "out").read_text() == "touch"
        assert (tmp_path / "mailer").read_text() == "configured"
    finally:
        producer.close()
        worker_queue.close()


def test_a_listless_producer_still_refuses_task_strings_and_says_what_to_do(db_url: str) -> None:
    """A string is data (it may come from a form or a file): it resolves only under the list,
    and nothing is imported for it."""
    producer = Queue(db_url, task_modules=[])
    try:
        with pytest.raises(TaskNotAllowed) as info:
            producer.enqueue("hostile_app.side_effect:anything")
        text = str(info.value)
        assert "'hostile_app.side_effect' is not in BATCHQ_TASK_MODULES" in text
        assert "pass the function itself" in text
        assert "hostile_app.side_effect" not in sys.modules
        assert job_rows(producer) == []
    finally:
        producer.close()


def test_functions_imported_into_an_allowed_module_are_stored_by_their_own_module(
    app_queue: Queue, db_url: str, tmp_path: Path
) -> None:
    """A function handed over is named by the module that defines it, never by the module it was
    imported into: os.system (imported into hostile_app.jobs) is stored as posix:system and a
    worker allowing hostile_app.jobs refuses it; so is a function of hostile_app.evil."""
    import hostile_app.jobs as jobs

    marker = tmp_path / "marker"
    producer = Queue(db_url, task_modules=[])
    try:
        producer.enqueue(jobs.system, f"touch {marker}")
        producer.enqueue(jobs.evil_touch, str(marker))
    finally:
        producer.close()
    assert [row["task"] for row in job_rows(app_queue)] == ["posix:system", "hostile_app.evil:evil_touch"]
    Worker(app_queue, RunOptions()).run()
    rows = job_rows(app_queue)
    assert all("is not in BATCHQ_TASK_MODULES" in row["last_error"] for row in rows), rows
    assert not marker.exists()
