"""What a job's task string may call, and how a task is called (issue 9: items 1, 7, 8, 9, 14).

A row is data anyone with write access could have written, so the hostile rows here are
INSERTed with plain SQL as well as offered to enqueue(). `tests/apps/hostile_app` is a small
application with the shapes an attacker looks for: `hostile_app.jobs` (the one allowed
module) imports os, subprocess, a module and functions and classes defined elsewhere;
`hostile_app.side_effect` writes a marker file when imported.
"""

from __future__ import annotations

from pathlib import Path

from batchq import Queue
from tests.support.db import job_rows
from tests.support.processes import run_batchq
from tests.support.rows import insert_row, rows_by_task
from tests.support.tasks import ALLOWED, HOSTILE, hostile_payload


def test_hostile_rows_fail_with_the_reason_and_nothing_runs(
    app_queue: Queue, db_url: str, tmp_path: Path
) -> None:
    markers = {}
    for index, (task_name, kind, _) in enumerate(HOSTILE):
        markers[task_name] = tmp_path / f"marker{index}"
        insert_row(app_queue, task_name, hostile_payload(kind, markers[task_name]))
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


def test_async_tasks_run_in_batchq_run(app_queue: Queue, db_url: str, tmp_path: Path) -> None:
    insert_row(app_queue, "hostile_app.jobs:async_touch", str(tmp_path / "a"))
    result = run_batchq(db_url, "run", BATCHQ_TASK_MODULES=ALLOWED)
    assert (result.returncode, result.stderr, job_rows(app_queue)) == (0, "", [])
    assert (tmp_path / "a").read_text() == "async"


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
