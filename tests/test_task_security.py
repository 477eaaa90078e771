"""What a job's task string may call, and how a task is called (issue 9: items 1, 7, 8, 9, 14).

A row is data anyone with write access could have written, so the hostile rows here are
INSERTed with plain SQL as well as offered to enqueue(). `tests/hostile_app` is a small
application with the shapes an attacker looks for: `hostile_app.jobs` (the one allowed
module) imports os, subprocess, a module and functions and classes defined elsewhere;
`hostile_app.side_effect` writes a marker file when imported.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import job_rows, run_batchq, sql

from batchq import ConfigError, Queue, TaskError, TaskNotAllowed, task
from batchq.tasks import Resolver, check_task_name
from batchq.worker import RunOptions, Worker, _describe_error

ALLOWED = "hostile_app.jobs"
NOW_SQL = {
    "sqlite": "strftime('%Y-%m-%d %H:%M:%f', 'now')",
    "mysql": "UTC_TIMESTAMP(6)",
    "postgresql": "statement_timestamp()",
}

# (task string, payload kind, what the refusal says). Payload "cmd" is a shell command that
# creates the marker, "path" the marker's path, None no payload.
HOSTILE: list[tuple[str, str | None, str]] = [
    ("hostile_app.jobs:os.system", "cmd", "'os' is a module"),
    ("hostile_app.jobs:subprocess.getoutput", "cmd", "'subprocess' is a module"),
    ("hostile_app.jobs:system", "cmd", "'system' is defined in module 'posix'"),
    ("hostile_app.jobs:getoutput", "cmd", "'getoutput' is defined in module 'subprocess'"),
    ("hostile_app.jobs:evil_touch", "path", "'evil_touch' is defined in module 'hostile_app.evil'"),
    ("hostile_app.jobs:Evil.run", "path", "'Evil' is defined in module 'hostile_app.evil'"),
    ("hostile_app.jobs:Evil.touch", "path", "'Evil' is defined in module 'hostile_app.evil'"),
    ("hostile_app.jobs:Child.run", "path", "'run' is defined in module 'hostile_app.evil'"),
    ("hostile_app.jobs:Child.touch", "path", "'touch' is defined in module 'hostile_app.evil'"),
    ("hostile_app.jobs:evil_object.touch", "path", "'touch' is defined in module 'hostile_app.evil'"),
    ("hostile_app.jobs:helpers.helper_touch", "path", "'helpers' is a module"),
    ("hostile_app.jobs:_private_touch", "path", "'_private_touch' starts with '_'"),
    ("hostile_app.jobs:touch.__globals__.clear", None, "'__globals__' starts with '_'"),
    ("hostile_app.jobs:Mailer.__init__", None, "'__init__' starts with '_'"),
    ("hostile_app.jobs:mailer.__class__", None, "'__class__' starts with '_'"),
    ("hostile_app.jobs:CONFIG.clear", None, "not a function or method defined in an allowed module"),
    ("hostile_app.jobs:generator_touch", "path", "generator function"),
    ("hostile_app.jobs:mailer.greeting", None, "is an attribute of the object, not a method"),
    ("evil_registered", "path", "registered in module 'hostile_app.evil', which BATCHQ_TASK_MODULES"),
    ("hostile_app.side_effect:anything", None, "module 'hostile_app.side_effect' is not in"),
    ("hostile_app.jobs.side_effect:anything", None, "is not in"),
    ("hostile_app.__main__:x", None, "is not in"),
]


def _payload(kind: str | None, marker: Path) -> Any:
    return {"cmd": f"touch {marker}", "path": str(marker), None: None}[kind]


def insert_row(queue: Queue, task_name: str, payload: Any, max_errors: int = 1) -> None:
    """A job row written with plain SQL, as anyone with write access to the table could."""
    dialect = queue.backend.dialect
    mark, now = ("?" if dialect == "sqlite" else "%s"), NOW_SQL[dialect]
    data = None if payload is None else json.dumps(payload).encode()
    sql(
        queue,
        "INSERT INTO batchq_job (queue, task, payload, serializer, priority, run_at, max_errors, "
        f"created_at) VALUES ('default', {mark}, {mark}, 'json', 0, {now}, {mark}, {now})",
        (task_name, data, max_errors),
    )


def rows_by_task(queue: Queue) -> dict[str, dict[str, Any]]:
    return {row["task"]: row for row in job_rows(queue)}


@pytest.fixture
def app_queue(db_url: str) -> Any:
    q = Queue(db_url, task_modules=[ALLOWED], secret=b"test-secret")
    yield q
    q.close()


# -- item 1: a task string resolves only to what an allowed module defines --------------------


@pytest.mark.parametrize("task_name, kind, reason", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_task_refused_at_enqueue(
    app_queue: Queue, tmp_path: Path, task_name: str, kind: str | None, reason: str
) -> None:
    marker = tmp_path / "marker"
    with pytest.raises(TaskError) as info:
        app_queue.enqueue(task_name, _payload(kind, marker))
    assert reason in str(info.value)
    assert job_rows(app_queue) == []
    assert not marker.exists()
    assert "hostile_app.side_effect" not in sys.modules  # refused without importing it


def test_hostile_rows_fail_with_the_reason_and_nothing_runs(
    app_queue: Queue, db_url: str, tmp_path: Path
) -> None:
    markers = {}
    for index, (task_name, kind, _) in enumerate(HOSTILE):
        markers[task_name] = tmp_path / f"marker{index}"
        insert_row(app_queue, task_name, _payload(kind, markers[task_name]))
    good = tmp_path / "good"
    insert_row(app_queue, "hostile_app.jobs:touch", str(good))  # runs after them all
    imported = tmp_path / "imported"
    result = run_batchq(db_url, "run", BATCHQ_TASK_MODULES=ALLOWED, HOSTILE_IMPORT_MARKER=str(imported))
    assert (result.returncode, result.stderr) == (0, "")
    rows = rows_by_task(app_queue)
    for task_name, _, reason in HOSTILE:
        row = rows[task_name]
        assert row["status"] == "failed", task_name
        assert reason in row["last_error"], (task_name, row["last_error"])
        assert row["last_error"].startswith(("TaskNotAllowed: ", "TaskError: ")), row["last_error"]
        assert not markers[task_name].exists(), task_name
    assert not imported.exists()  # no row imported hostile_app.side_effect
    assert good.read_text() == "touch" and "hostile_app.jobs:touch" not in rows


def test_a_package_entry_no_longer_allows_its_submodules(
    app_queue: Queue, db_url: str, tmp_path: Path
) -> None:
    """`hostile_app` allows the module hostile_app only: a row cannot import a submodule of it."""
    imported = tmp_path / "imported"
    insert_row(app_queue, "hostile_app.side_effect:anything", None)
    result = run_batchq(db_url, "run", BATCHQ_TASK_MODULES="hostile_app", HOSTILE_IMPORT_MARKER=str(imported))
    assert result.returncode == 0
    [row] = job_rows(app_queue)
    assert row["status"] == "failed"
    assert "'hostile_app.*' allows every submodule" in row["last_error"]
    assert not imported.exists()


def test_a_star_entry_allows_every_submodule_of_the_package(
    app_queue: Queue, db_url: str, tmp_path: Path
) -> None:
    marker = tmp_path / "helper"
    insert_row(app_queue, "hostile_app.helpers:helper_touch", str(marker))
    result = run_batchq(db_url, "run", BATCHQ_TASK_MODULES="hostile_app.*")
    assert (result.returncode, job_rows(app_queue)) == (0, [])
    assert marker.read_text() == "helper"


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


def test_resolver_refuses_without_importing() -> None:
    resolver = Resolver([ALLOWED])
    for name in ("hostile_app.side_effect:anything", "hostile_app:side_effect.anything"):
        with pytest.raises(TaskNotAllowed, match="is not allowed"):
            resolver.resolve(name)
    assert "hostile_app.side_effect" not in sys.modules


def test_a_listed_module_that_does_not_exist() -> None:
    with pytest.raises(TaskError, match="cannot import module 'no_such_module_here'"):
        Resolver(["no_such_module_here"]).resolve("no_such_module_here:f")


def test_module_entries_are_names_or_package_stars() -> None:
    resolver = Resolver(["myapp.jobs", "other.*"])
    assert resolver.module_allowed("myapp.jobs")
    assert not resolver.module_allowed("myapp") and not resolver.module_allowed("myapp.jobs.sub")
    assert resolver.module_allowed("other") and resolver.module_allowed("other.a.b")
    assert not resolver.module_allowed("otherx") and not resolver.module_allowed("other._private")
    assert not resolver.module_allowed("other.__main__")
    for bad in ("myapp/jobs", "*", "myapp.*.x", "myapp.jobs:f", "myapp.__main__"):
        with pytest.raises(ConfigError, match="BATCHQ_TASK_MODULES"):
            Resolver([bad])


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


def test_async_tasks_run_in_batchq_run(app_queue: Queue, db_url: str, tmp_path: Path) -> None:
    insert_row(app_queue, "hostile_app.jobs:async_touch", str(tmp_path / "a"))
    result = run_batchq(db_url, "run", BATCHQ_TASK_MODULES=ALLOWED)
    assert (result.returncode, result.stderr, job_rows(app_queue)) == (0, "", [])
    assert (tmp_path / "a").read_text() == "async"


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


# -- item 9: whatever a task raises is that job's failure --------------------------------------------


def test_odd_failures_are_recorded_and_the_worker_goes_on(
    app_queue: Queue, db_url: str, tmp_path: Path
) -> None:
    expected = {
        "hostile_app.jobs:exits": ("failed", "SystemExit: 3"),
        "hostile_app.jobs:interrupts": ("scheduled", "KeyboardInterrupt"),
        "hostile_app.jobs:raises_base_exception": ("scheduled", "Odd: not an Exception"),
        "hostile_app.jobs:raises_unprintable": (
            "scheduled",
            "Unprintable: Unprintable('hidden') (its str() raised",
        ),
        "hostile_app.jobs:raises_unreadable": ("scheduled", "Unreadable: (its message could not be read"),
    }
    for task_name, (status, _) in expected.items():
        app_queue.enqueue(task_name, max_errors=1 if status == "failed" else 10)
    app_queue.enqueue("hostile_app.jobs:touch", str(tmp_path / "after"))
    result = run_batchq(db_url, "run", BATCHQ_TASK_MODULES=ALLOWED)
    assert (result.returncode, result.stderr) == (0, "")
    assert (tmp_path / "after").read_text() == "touch"
    rows = rows_by_task(app_queue)
    assert set(rows) == set(expected)
    for task_name, (status, text) in expected.items():
        row = rows[task_name]
        assert (row["status"], row["error_count"]) == (status, 1), task_name
        assert row["last_error"].startswith(text), row["last_error"]


def test_describe_error_never_raises() -> None:
    from hostile_app.jobs import Unreadable

    text = _describe_error(Unreadable("hidden"))
    assert text.startswith("Unreadable: (its message could not be read")


# -- item 14: registered names ---------------------------------------------------------------------


def test_worker_imports_a_star_package_to_find_a_registered_name(
    app_queue: Queue, db_url: str, tmp_path: Path
) -> None:
    insert_row(app_queue, "reg_touch", str(tmp_path / "out"))
    main_marker, private_marker = tmp_path / "main", tmp_path / "private"
    result = run_batchq(
        db_url,
        "run",
        BATCHQ_TASK_MODULES="reg_app.*",
        REG_MAIN_MARKER=str(main_marker),
        REG_PRIVATE_MARKER=str(private_marker),
    )
    assert (result.returncode, result.stderr, job_rows(app_queue)) == (0, "", [])
    assert (tmp_path / "out").read_text() == "registered"
    assert not main_marker.exists() and not private_marker.exists()  # never reg_app.__main__ or _private


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


def first_function(payload: Any = None) -> None:
    return None


def second_function(payload: Any = None) -> None:
    return None


def test_a_registered_name_cannot_be_taken_twice() -> None:
    task(name="security_dup")(first_function)
    task(name="security_dup")(first_function)  # the same function again: fine
    with pytest.raises(TaskError, match="already registered"):
        task(name="security_dup")(second_function)
    assert Resolver([__name__]).resolve("security_dup") is first_function


def test_reloading_a_module_re_registers_its_tasks() -> None:
    import reg_app.tasks

    importlib.reload(reg_app.tasks)  # new function objects, same module and name
    assert Resolver(["reg_app.tasks"]).resolve("reg_touch") is reg_app.tasks.reg_touch


@pytest.mark.parametrize("name", ["jobs:record\n", "send_mail\n", "jobs:record\r\n"])
def test_task_names_with_a_trailing_newline_are_refused(name: str) -> None:
    with pytest.raises(TaskError, match="bad task name"):
        check_task_name(name)


def test_module_entry_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(ConfigError, match="bad BATCHQ_TASK_MODULES entry"):
        Resolver(["jobs\n"])
