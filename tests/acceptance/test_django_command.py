"""`manage.py batchq ...`: batchq's command line with the Django project's settings, on every
backend (the project of tests/apps/djproj_settings.py, as in test_django_tasks.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.db import fresh_database_url
from tests.support.django_project import DjangoProject
from tests.support.processes import assert_one_line_error, wait_for

pytestmark = pytest.mark.slow  # Django processes and workers: seconds per test


def test_init_db_and_sweeps_pass_through(backend_name: str, tmp_path: Path) -> None:
    """On a database without batchq's tables: init-db creates them (quiet, 0), then the
    commands an operator's crontab runs work on the backend's database."""
    project = DjangoProject(fresh_database_url(backend_name, tmp_path, "djcommand"), tmp_path)
    if backend_name == "sqlite":
        Path(project.url.removeprefix("sqlite:///")).touch()  # Django's database file exists
    missing = project.batchq("stats")
    assert_one_line_error(missing, "run `batchq init-db`")
    done = project.batchq("init-db")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    for command in (["gc-processing"], ["gc-error"], ["run"], ["run", "--queue", "mail", "--max-jobs", "1"]):
        done = project.batchq(*command)
        assert (command, done.returncode, done.stdout, done.stderr) == (command, 0, "", "")
    stats = project.batchq("stats")
    assert stats.returncode == 0 and project.url.split("@")[-1].split("/")[0] in stats.stdout


def test_migrate_creates_the_tables(backend_name: str, tmp_path: Path) -> None:
    project = DjangoProject(fresh_database_url(backend_name, tmp_path, "djmigrate"), tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "django", "migrate", "--noinput"],
        env=project.env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and "Applying batchq.0001_batchq_schema... OK" in done.stdout, done.stderr
    out = project.shell("from djproj_app import tasks\nout = tasks.add.enqueue(1, 2).id")
    assert project.batchq("run").returncode == 0
    assert project.ran() == ["add 1 2"] and out


def test_mistakes_are_one_line(db_url: str, tmp_path: Path) -> None:
    project = DjangoProject(db_url, tmp_path)
    not_batchq = project.batchq("--backend", "other", "run")
    assert_one_line_error(not_batchq, "TASKS['other'] is DummyBackend", "--backend ALIAS", status=2)
    unknown = project.batchq("--backend", "nosuch", "stats")
    assert_one_line_error(unknown, "no task backend 'nosuch'", status=2)
    bad_settings = project.batchq("run", DJPROJ_MAX_ERRORS="0")
    assert_one_line_error(bad_settings, "TASKS['default']['OPTIONS']['MAX_ERRORS']", status=2)
    in_memory = DjangoProject("sqlite:///:memory:", tmp_path).batchq("run")
    assert_one_line_error(in_memory, "in-memory SQLite database", status=2)
    bad_option = project.batchq("run", "--no-such-option")
    assert_one_line_error(bad_option, "no such option", "manage.py batchq run --help", status=2)


def test_check_refuses_an_in_memory_queue(tmp_path: Path) -> None:
    """`manage.py check`: a queue in an in-memory SQLite database no worker could reach."""
    project = DjangoProject("sqlite:///:memory:", tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "django", "check"], env=project.env(), capture_output=True, text=True
    )
    assert done.returncode == 1 and "(batchq.E001) database 'default' is an in-memory SQLite" in done.stderr


def test_call_command(db_url: str, tmp_path: Path) -> None:
    """call_command("batchq", ...) from Python: 0 returns; another status raises CommandError."""
    project = DjangoProject(db_url, tmp_path)
    out = project.shell(
        """
from django.core.management import call_command, CommandError
call_command("batchq", "gc-processing")
try:
    call_command("batchq", "explain", "999999")
    out = "no error"
except CommandError as exc:
    out = [exc.returncode, str(exc)]
"""
    )
    assert out == [1, "batchq exited with status 1"]


def test_killed_worker_job_runs_again(db_url: str, tmp_path: Path) -> None:
    """SIGKILL in the middle of a Django task: gc-processing puts the job back at once (its
    worker is gone; the try counts, so with MAX_ERRORS 1 it would be FAILED, saying why), the
    next worker runs it, and get_result() says SUCCESSFUL on the second attempt."""
    project = DjangoProject(db_url, tmp_path, extra_env={"DJPROJ_MAX_ERRORS": "2"})
    marker = tmp_path / "marker"
    job = project.shell(f"from djproj_app import tasks\nout = tasks.hang_once.enqueue({str(marker)!r}).id")
    worker = subprocess.Popen(
        [sys.executable, "-m", "django", "batchq", "run"],
        env=project.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: project.ran() == ["first try"])
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    swept = project.batchq("gc-processing")
    assert swept.returncode == 3 and f"#{job}" in swept.stdout, (swept.stdout, swept.stderr)
    done = project.batchq("run")
    assert done.returncode == 0, done.stderr
    assert project.ran() == ["first try", "second try"]
    result = project.shell(
        f"from batchq.contrib.django.compat import default_task_backend as b\nr = b.get_result({job!r})\n"
        "out = [str(r.status), r.return_value, r.attempts]"
    )
    assert result == ["SUCCESSFUL", "done", 2]
