"""The command as cron and a human see it: exit statuses, quiet success, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batchq import Queue
from tests.support.cli import invoke_batchq
from tests.support.db import job_rows
from tests.support.processes import assert_one_line_error, run_batchq


@pytest.mark.parametrize("url", ["nosuch://x", "mysql://", "sqlite://relative.db", "mysql://h:99999/db"])
def test_bad_url(url: str) -> None:
    assert_one_line_error(invoke_batchq(url, "stats"), "bad", status=2)


def test_unreachable_server_hides_the_password() -> None:
    result = invoke_batchq("mysql://root:s3cret-pw@127.0.0.1:1/db", "run")  # fails before the worker
    assert_one_line_error(result, "cannot reach mysql://root:***@127.0.0.1:1/db")
    assert "s3cret-pw" not in result.stderr + result.stdout


def test_password_never_in_help() -> None:
    result = invoke_batchq("mysql://root:s3cret-pw@127.0.0.1/db", "--help")
    assert result.returncode == 0 and "s3cret-pw" not in result.stdout


def test_missing_schema(tmp_path: Path) -> None:
    assert_one_line_error(invoke_batchq(f"sqlite:///{tmp_path / 'x.db'}", "run"), "batchq init-db")


@pytest.mark.parametrize(
    "args",
    [
        ("stats",),
        ("explain", "1"),
        ("status",),
        ("gc-error",),
        ("mq", "prune", "--older-than", "1d"),
        ("run",),
    ],
)
def test_a_mistyped_sqlite_path_is_not_created(tmp_path: Path, args: tuple[str, ...]) -> None:
    """Only init-db makes an SQLite database: any other command says the file is missing and
    leaves no folder or empty file behind."""
    url = f"sqlite:///{tmp_path / 'typo' / 'jobs.db'}"
    result = invoke_batchq(url, *args)
    assert_one_line_error(result, f"the file {tmp_path / 'typo' / 'jobs.db'} does not exist", "init-db")
    assert list(tmp_path.iterdir()) == []
    assert invoke_batchq(url, "init-db").returncode == 0
    assert (tmp_path / "typo" / "jobs.db").is_file()
    batchq = run_batchq if args[0] == "run" else invoke_batchq  # a worker runs in a process of its own
    assert "init-db" not in batchq(url, *args).stderr


def test_bad_duration_is_a_usage_error(db_url: str) -> None:
    result = invoke_batchq(db_url, "gc-processing", "--older-than", "soon")
    assert result.returncode == 2 and "bad duration 'soon'" in result.stderr
    assert "Traceback" not in result.stderr


def test_healthy_commands_are_quiet(db_url: str) -> None:
    for args in (["init-db"], ["run"], ["gc-processing"], ["gc-error"]):
        batchq = run_batchq if args[0] == "run" else invoke_batchq  # a worker runs in a process of its own
        result = batchq(db_url, *args)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", ""), args


def test_enqueue_run_and_stats_from_the_shell(queue: Queue, db_url: str, tmp_path: Path) -> None:
    marker = tmp_path / "m"
    result = invoke_batchq(db_url, "enqueue", "jobs:touch", json.dumps(str(marker)))
    assert result.returncode == 0 and result.stdout.strip().isdigit()
    stats = json.loads(invoke_batchq(db_url, "stats", "--json").stdout)
    assert stats["queues"][0]["ready"] == 1
    assert run_batchq(db_url, "run").returncode == 0
    assert marker.exists()


def test_enqueue_refuses_bad_input(db_url: str, queue: Queue) -> None:
    assert invoke_batchq(db_url, "enqueue", "jobs:noop", "{not json").returncode == 2
    assert_one_line_error(invoke_batchq(db_url, "enqueue", "os:system", '"id"'), "not allowed", status=2)
    assert job_rows(queue) == []


def test_enqueue_after_waits_for_its_parents_and_refuses_what_it_cannot_wait_for(
    db_url: str, queue: Queue
) -> None:
    first, second = queue.enqueue("jobs:noop"), queue.enqueue("jobs:noop")
    made = invoke_batchq(db_url, "enqueue", "jobs:noop", "--after", str(first), "--after", str(second))
    assert made.returncode == 0, made.stderr
    child = int(made.stdout)
    assert queue.explain(child).waiting_for == (first, second)
    unknown = invoke_batchq(db_url, "enqueue", "jobs:noop", "--after", "424242")
    assert_one_line_error(unknown, "424242", status=2)
    refused = invoke_batchq(db_url, "enqueue", "jobs:noop", "--after", str(first), "--delay", "1m")
    assert_one_line_error(refused, "after", status=2)
    assert invoke_batchq(db_url, "enqueue", "jobs:noop", "--after", "x").returncode == 2
    assert [row["id"] for row in job_rows(queue)] == [first, second, child]


def test_gc_error_report_json_hook_and_requeue(queue: Queue, db_url: str, tmp_path: Path) -> None:
    job_id = queue.enqueue("jobs:fail", "x", max_errors=1)
    assert run_batchq(db_url, "run").returncode == 0
    report = invoke_batchq(db_url, "gc-error")
    assert report.returncode == 3
    assert f"#{job_id} default jobs:fail (1 error): ValueError: boom: 'x'" in report.stdout
    hook_out = tmp_path / "hook"
    listed = invoke_batchq(db_url, "gc-error", "--json", "--hook", "jobs:save_hook", HOOK_OUT=str(hook_out))
    assert listed.returncode == 3
    assert [job["id"] for job in json.loads(listed.stdout)] == [job_id]
    assert hook_out.read_text() == str(job_id)
    assert invoke_batchq(db_url, "gc-error", "--requeue").returncode == 3
    assert job_rows(queue)[0]["status"] == "ready"
    assert invoke_batchq(db_url, "gc-error").returncode == 0


def test_cancel_exit_status(queue: Queue, db_url: str) -> None:
    job_id = queue.enqueue("jobs:noop")
    assert invoke_batchq(db_url, "cancel", str(job_id)).returncode == 0
    again = invoke_batchq(db_url, "cancel", str(job_id))
    assert again.returncode == 1 and "not cancelled" in again.stderr


def test_handler_runs_every_job(queue: Queue, db_url: str, tmp_path: Path) -> None:
    queue.enqueue("jobs:noop", str(tmp_path / "a"))
    queue.enqueue("jobs:noop", str(tmp_path / "b"))
    assert run_batchq(db_url, "run", "--handler", "jobs:touch").returncode == 0
    assert (tmp_path / "a").exists() and (tmp_path / "b").exists()


def test_handler_is_held_to_the_task_modules(queue: Queue, db_url: str, tmp_path: Path) -> None:
    """`run --handler` resolves under BATCHQ_TASK_MODULES, as `consume` does its handlers: a
    handler outside it is refused before any job is claimed, never called with the payload."""
    marker = tmp_path / "ran"
    job_id = queue.enqueue("jobs:noop", f"touch {marker}")
    refused = invoke_batchq(db_url, "run", "--handler", "os:system")  # refused before the worker starts
    assert_one_line_error(refused, "--handler 'os:system' refused", "BATCHQ_TASK_MODULES", status=2)
    assert not marker.exists()
    assert [(row["id"], row["status"]) for row in job_rows(queue)] == [(job_id, "ready")]
    assert_one_line_error(invoke_batchq(db_url, "run", "--handler", "jobs:_private"), "not allowed", status=2)


def test_run_batch_option(queue: Queue, db_url: str) -> None:
    queue.enqueue_many("jobs:noop", list(range(25)))
    result = run_batchq(db_url, "-v", "run", "--batch", "10")
    assert result.returncode == 0 and "processed 25 jobs (25 ok, 0 errors)" in result.stderr
    assert job_rows(queue) == []
