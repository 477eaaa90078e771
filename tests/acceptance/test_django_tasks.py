"""The Django Tasks backend (batchq.contrib.django) end to end, on every backend: a Django
project (tests/apps/djproj_settings.py) enqueues in its own processes, `manage.py batchq run`
processes run the jobs, get_result() reads their outcomes from yet another process.

DATABASES["default"] is the queue's database (Django on MariaDB through mysqlclient), so jobs
are enqueued on Django's connection and join its transactions; test_queue_in_another_database
runs the OPTIONS URL path (Django's database an SQLite file, the queue on the test backend).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from batchq import Queue
from tests.support.db import app_connection, run_query
from tests.support.django_project import DjangoProject

# Each test starts Django processes and `manage.py batchq run` workers: several seconds.
pytestmark = pytest.mark.slow

PRELUDE = """
from datetime import datetime, timedelta
from django.db import connection, transaction
from django.utils import timezone
from batchq.contrib.django.compat import default_task_backend as backend, TaskResultStatus
from batchq.contrib.django.compat import InvalidTask as InvalidTaskError, TaskResultDoesNotExist
from djproj_app import tasks

def described(r):
    return {
        "id": r.id, "status": str(r.status), "args": r.args, "kwargs": r.kwargs,
        "value": r.return_value if r.status == TaskResultStatus.SUCCESSFUL else None,
        "errors": [[e.exception_class_path, e.traceback] for e in r.errors],
        "attempts": r.attempts, "task": r.task.module_path, "queue": r.task.queue_name,
        "enqueued": r.enqueued_at is not None, "started": r.started_at is not None,
        "finished": r.finished_at is not None, "is_finished": r.is_finished,
    }
"""


@pytest.fixture
def project(db_url: str, tmp_path: Path) -> Iterator[DjangoProject]:
    yield DjangoProject(db_url, tmp_path)


def shell(project: DjangoProject, code: str) -> dict:
    return project.shell(PRELUDE + code)


def run_worker(project: DjangoProject, *args: str) -> None:
    """A worker drains what is due and exits 0, quiet (cron mails what it prints)."""
    done = project.batchq("run", *args)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_enqueue_run_and_get_result(project: DjangoProject) -> None:
    out = shell(
        project,
        """
add = tasks.add.enqueue(2, 3)
out = {
    "add": described(add),
    "echo": tasks.echo.enqueue(1, (2, 3), k={"a": [None, 1.5]}).id,
    "false": tasks.returns_false.enqueue().id,
    "async": tasks.async_add.enqueue(40, 2).id,
    "context": tasks.whoami.enqueue().id,
    "before": described(backend.get_result(add.id)),
}
""",
    )
    enqueued = out["add"]
    assert enqueued["status"] == "READY" and enqueued["args"] == [2, 3] and enqueued["attempts"] == 0
    assert enqueued["enqueued"] and not enqueued["started"] and not enqueued["is_finished"]
    assert out["before"]["status"] == "READY" and out["before"]["task"] == "djproj_app.tasks.add"
    assert project.ran() == []

    run_worker(project)

    ids = {
        name: out[name] if name != "add" else enqueued["id"]
        for name in ("add", "echo", "false", "async", "context")
    }
    results = shell(
        project, f"ids = {ids!r}\nout = {{name: described(backend.get_result(i)) for name, i in ids.items()}}"
    )
    for name, result in results.items():
        assert result["status"] == "SUCCESSFUL", (name, result)
        assert result["attempts"] == 1 and result["started"] and result["finished"] and result["is_finished"]
        assert result["errors"] == []
    assert results["add"]["value"] == 5
    assert results["echo"]["value"] == {"args": [1, [2, 3]], "kwargs": {"k": {"a": [None, 1.5]}}}
    assert results["echo"]["args"] == [1, [2, 3]] and results["echo"]["kwargs"] == {"k": {"a": [None, 1.5]}}
    assert results["false"]["value"] is False  # batchq counts a False return as a failure: not here
    assert results["async"]["value"] == 42
    assert results["context"]["value"] == {"id": ids["context"], "attempt": 1}
    assert sorted(project.ran()) == sorted(["add 2 3", "echo", "false", "async"])


def test_refresh_and_task_get_result(project: DjangoProject) -> None:
    """TaskResult.refresh() and Task.get_result() (which checks the task) read the job again."""
    out = shell(
        project,
        """
r = tasks.add.enqueue(20, 22)
import subprocess, sys, os
subprocess.run([sys.executable, "-m", "django", "batchq", "run"], check=True)
before = str(r.status)
r.refresh()
try:
    tasks.boom.get_result(r.id)
    mismatch = None
except Exception as exc:
    mismatch = type(exc).__name__
same = described(tasks.add.get_result(r.id))
out = {"before": before, "after": described(r), "same": same, "mismatch": mismatch}
""",
    )
    assert out["before"] == "READY"
    assert out["after"]["status"] == "SUCCESSFUL" and out["after"]["value"] == 42
    assert out["same"] == out["after"]
    assert out["mismatch"] == "TaskResultMismatch"


def test_failing_task(project: DjangoProject) -> None:
    ids = shell(project, "out = [tasks.boom.enqueue('the disk is full').id, tasks.not_json.enqueue().id]")
    run_worker(project)  # quiet: failures are gc-error's to report
    boom, not_json = shell(
        project,
        f"""
out = []
for i in {ids!r}:
    r = backend.get_result(i)
    try:
        r.return_value
        raised = None
    except ValueError as exc:
        raised = str(exc)
    out.append({{**described(r), "raised": raised}})
""",
    )
    assert boom["status"] == "FAILED" and boom["is_finished"] and boom["finished"] and boom["attempts"] == 1
    assert boom["raised"] == "Task failed"
    [[exception, traceback]] = boom["errors"]
    assert exception == "builtins.ValueError"
    assert traceback.startswith("Traceback (most recent call last):")
    assert "djproj_app/tasks.py" in traceback and traceback.rstrip().endswith("ValueError: the disk is full")
    # A return value JSON cannot carry fails the task, as with Django's own backends.
    assert not_json["status"] == "FAILED" and not_json["errors"][0][0] == "builtins.TypeError"
    assert project.ran() == ["boom"]
    report = project.batchq("gc-error")
    assert report.returncode == 3 and "djproj_app.tasks.boom" in report.stdout


def test_cancelled_job_reads_failed(project: DjangoProject) -> None:
    """`batchq cancel ID`: a job that never ran reads as FAILED (Django's "unable to start"),
    with no error, and no worker runs it."""
    [job_id] = shell(project, "out = [tasks.record.enqueue('never').id]")
    cancelled = project.batchq("cancel", job_id)
    assert cancelled.returncode == 0, cancelled.stderr
    run_worker(project)
    result = shell(project, f"out = described(backend.get_result({job_id!r}))")
    assert result["status"] == "FAILED" and result["errors"] == [] and result["attempts"] == 0
    assert project.ran() == []


def _make_due(project: DjangoProject) -> None:
    """Every waiting job due now (no sleeping through a delay: a loaded machine outruns it)."""
    queue = Queue(project.url)
    try:
        run_query(queue, "jobs_make_due")
    finally:
        queue.close()


def test_retries_with_max_errors(project: DjangoProject) -> None:
    """OPTIONS MAX_ERRORS > 1: a failed try leaves the job READY, due again after the backoff."""
    project.extra_env["DJPROJ_MAX_ERRORS"] = "2"
    [job_id] = shell(project, "out = [tasks.boom.enqueue('once').id]")
    run_worker(project, "--backoff", "1h")
    first = shell(project, f"out = described(backend.get_result({job_id!r}))")
    assert first["status"] == "READY" and first["attempts"] == 1 and not first["is_finished"]
    _make_due(project)
    run_worker(project, "--backoff", "1h")
    second = shell(project, f"out = described(backend.get_result({job_id!r}))")
    assert second["status"] == "FAILED" and second["attempts"] == 2
    assert project.ran() == ["boom", "boom"]


def test_enqueue_in_atomic(project: DjangoProject, backend_name: str) -> None:
    """A job enqueued in transaction.atomic() commits or rolls back with the block, when the
    queue is in the app's database; in another database (OPTIONS URL) it is written at once."""
    out = shell(
        project,
        """
with transaction.atomic():
    kept = tasks.record.enqueue("committed").id
try:
    with transaction.atomic():
        lost = tasks.record.enqueue("rolled back").id
        inside = backend.queue().stats()
        raise RuntimeError("the view failed")
except RuntimeError:
    pass
out = {"kept": kept, "lost": lost}
""",
    )
    run_worker(project)
    assert project.ran() == ["committed"]
    results = shell(
        project,
        f"""
try:
    backend.get_result({out["lost"]!r})
    lost = "found"
except TaskResultDoesNotExist:
    lost = "does not exist"
out = {{"kept": described(backend.get_result({out["kept"]!r}))["status"], "lost": lost}}
""",
    )
    assert results == {"kept": "SUCCESSFUL", "lost": "does not exist"}


def test_uncommitted_job_is_invisible_to_workers(project: DjangoProject, backend_name: str) -> None:
    """While the app's transaction is open, a worker does not see (and cannot run) its job."""
    out = shell(
        project,
        """
import subprocess, sys
with transaction.atomic():
    tasks.record.enqueue("in transaction")
    tasks.add.enqueue(1, 1)  # a second write: the transaction is surely open
    if connection.vendor == "sqlite":
        during = None  # one writer: the worker would wait for the lock, and the test with it
    else:
        worker = [sys.executable, "-m", "django", "batchq", "run"]
        during = subprocess.run(worker, capture_output=True, text=True).returncode
out = {"during": during}
""",
    )
    if backend_name != "sqlite":
        assert out["during"] == 0
        assert project.ran() == []
    run_worker(project)
    assert sorted(project.ran()) == ["add 1 1", "in transaction"]


def test_queue_in_another_database(db_url: str, tmp_path: Path) -> None:
    """OPTIONS URL: Django's own database is an SQLite file, the queue is on the test backend.
    The job is written at once on batchq's connection, whatever atomic() block is open (no
    connection could make it part of another database's transaction); it runs and its result
    reads as ever."""
    project = DjangoProject(db_url, tmp_path, queue_url_mode=True)
    out = shell(
        project,
        """
try:
    with transaction.atomic():
        job = tasks.add.enqueue(1, 2).id
        raise RuntimeError("the view failed")
except RuntimeError:
    pass
out = {"job": job, "url": backend.url, "vendor": connection.vendor}
""",
    )
    assert out["url"] == db_url and out["vendor"] == "sqlite"
    run_worker(project)
    assert project.ran() == ["add 1 2"]
    result = shell(project, f"out = described(backend.get_result({out['job']!r}))")
    assert result["status"] == "SUCCESSFUL" and result["value"] == 3


def test_run_after(project: DjangoProject) -> None:
    ids = shell(
        project,
        """
later = tasks.record.using(run_after=timezone.now() + timedelta(minutes=30)).enqueue("later").id
now = tasks.record.enqueue("now").id
out = [later, now]
""",
    )
    run_worker(project)
    assert project.ran() == ["now"]
    assert shell(project, f"out = str(backend.get_result({ids[0]!r}).status)") == "READY"
    _make_due(project)
    run_worker(project)
    assert project.ran() == ["now", "later"]


def test_run_after_is_the_jobs_run_at(project: DjangoProject) -> None:
    """run_after becomes the job's run_at (issue 30): an hour ahead, no worker runs it meanwhile."""
    job_id = shell(
        project,
        """
out = tasks.record.using(run_after=timezone.now() + timedelta(hours=1)).enqueue("later").id
""",
    )
    run_worker(project)
    assert project.ran() == []
    assert shell(project, f"out = str(backend.get_result({job_id!r}).status)") == "READY"


def test_run_after_naive_when_use_tz_is_off(project: DjangoProject) -> None:
    """USE_TZ = False: run_after is a naive time in TIME_ZONE (Europe/Paris, not UTC)."""
    project.extra_env["DJPROJ_USE_TZ"] = "0"
    job_id = shell(
        project,
        """
soon = timezone.now() + timedelta(minutes=30)  # naive, Paris time (UTC+1 in winter, +2 in summer)
assert timezone.is_naive(soon) and abs(soon - datetime.utcnow()) > timedelta(minutes=30)
out = tasks.record.using(run_after=soon).enqueue("soon").id
""",
    )
    run_worker(project)
    assert project.ran() == []  # read as UTC, it would have been due 30 or 90 minutes ago
    _make_due(project)
    run_worker(project)
    assert project.ran() == ["soon"]
    times = project.shell(  # naive again, in TIME_ZONE, as Django's own datetimes are then
        PRELUDE
        + f"""
r = backend.get_result({job_id!r})
before = datetime.now() - timedelta(minutes=1)
times = (r.enqueued_at, r.started_at, r.finished_at)
out = [timezone.is_naive(t) and before < t <= datetime.now() for t in times]
"""
    )
    assert times == [True, True, True]


def test_priority_order_and_queues(project: DjangoProject) -> None:
    out = shell(
        project,
        """
tasks.record.using(priority=-10).enqueue("low")
tasks.record.enqueue("normal")
tasks.record.using(priority=50).enqueue("high")
tasks.send_mail.enqueue("a@b.c")
try:
    tasks.record.using(queue_name="nosuch").enqueue("x")
    refused = None
except InvalidTaskError as exc:
    refused = str(exc)
out = {"refused": refused}
""",
    )
    assert out["refused"] == "Queue 'nosuch' is not valid for backend."
    run_worker(project, "--queue", "mail")  # one queue when asked
    assert project.ran() == ["mail a@b.c"]
    run_worker(project)  # the backend's QUEUES by default
    assert project.ran() == ["mail a@b.c", "high", "normal", "low"]


def test_unknown_result_ids(project: DjangoProject, db_url: str) -> None:
    """Ids no Django Task job has: TaskResultDoesNotExist, as Django's own backends raise."""
    plain = Queue(db_url, task_modules=["jobs"])
    plain_id = plain.enqueue("jobs:noop", keep_result=True)  # batchq's, not a Django Task's
    plain.close()
    out = shell(
        project,
        f"""
out = {{}}
for i in ["999999999", "abc", "-1", "", "1e3", "9" * 40, {str(plain_id)!r}]:
    try:
        backend.get_result(i)
        out[i] = "found"
    except TaskResultDoesNotExist:
        out[i] = "TaskResultDoesNotExist"
""",
    )
    assert set(out.values()) == {"TaskResultDoesNotExist"}, out


def test_rows_naming_other_things_are_refused(project: DjangoProject, db_url: str, backend_name: str) -> None:
    """A row written by hand may name only a Django Task the project defines: not a plain
    function of its tasks module, not os:system, not what the worker's allow-list entry holds."""
    names = [
        "djproj_app.tasks.plain_function",
        "djproj_app.tasks:plain_function",
        "djproj_app.tasks._record",
        "os:system",
        "os.system",
        "batchq.contrib.django.entry:DjangoTask",
        "batchq.contrib.django.entry:DjangoTask.__call__",
        "batchq.contrib.django.entry:current_job",
        "batchq.contrib.django.entry:normalize_json",
        "batchq.contrib.django.registry:discover",
        "batchq.contrib.django.registry:register",
        "antigravity.fly",
    ]
    conn = app_connection(db_url)
    try:
        cur = conn.cursor()
        for name in names:
            cur.execute(*_insert_job(backend_name, name, b'{"args": ["touch /tmp/pwned"], "kwargs": {}}'))
        conn.commit()
    finally:
        conn.close()
    done = project.batchq("run")
    assert done.returncode == 0, done.stderr
    assert project.ran() == []
    conn = app_connection(db_url)
    try:
        cur = conn.cursor()
        cur.execute("SELECT task, status, last_error FROM batchq_job")
        rows = {task: (status, error) for task, status, error in cur.fetchall()}
    finally:
        conn.close()
    assert set(rows) == set(names)
    for name, (status, error) in rows.items():
        assert status == "failed", (name, status, error)
        assert error.startswith(("TaskNotAllowed: ", "TaskError: ")), (name, error)


def test_odd_payloads_of_a_real_task_fail_cleanly(
    project: DjangoProject, db_url: str, backend_name: str
) -> None:
    """Rows naming a registered Task with payloads Django would never write: each fails with its
    reason (never a TypeError inside the task's own code, never a traceback of the worker)."""
    payloads = {
        b"[1, 2]": "PayloadError: a Django task's payload is",
        b'{"args": "12"}': "PayloadError: a Django task's payload is",
        b'{"args": [1, 2], "kwargs": [3]}': "PayloadError: a Django task's payload is",
        b'{"args": [1, 2], "backend": 7}': "PayloadError: a Django task's payload is",
        b'{"args": [1, 2], "backend": "nosuch"}': "InvalidTaskBackend",
        b'{"args": [1, 2], "backend": "other"}': "PayloadError: the job names task backend 'other'",
        b'{"args": [1], "kwargs": {"c": 2}}': "TypeError: add() got an unexpected keyword argument 'c'",
        b"null": "PayloadError: a Django task's payload is",
    }
    conn = app_connection(db_url)
    try:
        cur = conn.cursor()
        for payload in payloads:
            cur.execute(*_insert_job(backend_name, "djproj_app.tasks.add", payload))
        conn.commit()
    finally:
        conn.close()
    run_worker(project)
    assert project.ran() == []
    conn = app_connection(db_url)
    try:
        cur = conn.cursor()
        cur.execute("SELECT payload, status, last_error FROM batchq_job")
        rows = {
            bytes(payload) if payload is not None else b"null": (status, error)
            for payload, status, error in cur
        }
    finally:
        conn.close()
    for payload, needle in payloads.items():
        status, error = rows[payload]
        assert status == "failed" and needle in error, (payload, error)


def _insert_job(backend_name: str, task: str, payload: bytes) -> tuple[str, tuple[object, ...]]:
    now = {
        "sqlite": "strftime('%Y-%m-%d %H:%M:%f', 'now')",
        "mysql": "UTC_TIMESTAMP(6)",
        "postgresql": "now()",
    }
    mark = "?" if backend_name == "sqlite" else "%s"
    sql = (
        "INSERT INTO batchq_job (queue, task, payload, serializer, max_errors, run_at, created_at) "
        f"VALUES ('default', {mark}, {mark}, 'json', 1, {now[backend_name]}, {now[backend_name]})"
    )
    return sql, (task, payload)


def test_django_backend_contract(backend_name: str, db_url: str, project: DjangoProject) -> None:
    """Django's own expectations of a Tasks backend (tests/apps/djproj_app/tests.py, adapted from
    django-tasks and django-tasks-db), run by Django's test runner: its test database gets
    batchq's tables from the contrib app's migration, and is dropped at the end (no batchq
    connection left open on it)."""
    done = subprocess.run(
        [sys.executable, "-m", "django", "test", "djproj_app", "--noinput"],
        env=project.env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "\nOK" in done.stderr and "Ran 23 tests" in done.stderr, done.stderr
    assert "Destroying test database" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_task_snoozes_and_discards(project: DjangoProject) -> None:
    """batchq.Snooze and batchq.Discard from a Django Task (batchq.jobs.control): a snooze leaves the
    job READY with no try counted, a Discard fails it for good whatever MAX_ERRORS allows."""
    project.extra_env["DJPROJ_MAX_ERRORS"] = "3"
    snoozing, discarded = shell(
        project, "out = [tasks.snooze_once.enqueue('nap').id, tasks.discard.enqueue('no such order').id]"
    )
    run_worker(project)
    napping = shell(project, f"out = described(backend.get_result({snoozing!r}))")
    assert (
        napping["status"] == "READY" and napping["attempts"] == 0 and napping["errors"] == []
    )  # none counted
    failed = shell(project, f"out = described(backend.get_result({discarded!r}))")
    assert failed["status"] == "FAILED" and failed["attempts"] == 1
    [[exception, traceback]] = failed["errors"]
    assert exception == "batchq.jobs.control.Discard" and "no such order" in traceback
    _make_due(project)
    run_worker(project)
    woke = shell(project, f"out = described(backend.get_result({snoozing!r}))")
    assert woke["status"] == "SUCCESSFUL" and woke["value"] == "woke" and woke["attempts"] == 1
    assert project.ran() == ["nap", "discard", "nap"]


def test_after_makes_tasks_wait_for_their_parents(project: DjangoProject, db_url: str) -> None:
    """Django's Task API has no place for batchq's after= (Task.using takes four fixed options,
    enqueue's arguments are the task's): batchq.contrib.django.after, a block around the
    enqueues. Nested blocks add up; aenqueue sees the block; inside atomic() the job and its
    links join the block's transaction; an unknown parent is refused before anything is written."""
    out = shell(
        project,
        """
import asyncio
from batchq import ConfigError
from batchq.contrib.django import after
first = tasks.record.enqueue("first")
with after(first):
    second = tasks.record.enqueue("second")
    with after(second.id):
        third = asyncio.run(tasks.record.aenqueue("third"))
plain = tasks.record.enqueue("plain")
try:
    with transaction.atomic(), after(first):
        tasks.record.enqueue("rolled back")
        raise RuntimeError("the view failed")
except RuntimeError:
    pass
refused = []
for parents in ([999999999], ["not an id"]):
    try:
        with after(*parents):
            tasks.record.enqueue("never")
    except ConfigError as exc:
        refused.append(str(exc))
out = {
    "ids": [first.id, second.id, third.id, plain.id],
    "statuses": [described(backend.get_result(r.id))["status"] for r in (second, third)],
    "refused": refused,
}
""",
    )
    first, second, third, plain = (int(job_id) for job_id in out["ids"])
    assert out["statuses"] == ["READY", "READY"]  # waiting reads as READY (Django has no other)
    assert "no job 999999999 waiting, running or succeeded" in out["refused"][0]
    assert "is not a batchq job" in out["refused"][1]
    look = Queue(db_url)
    try:
        waits = look.backend.stores.dependencies.waiting_for(third)
        assert waits.parents == ((first, "ready"), (second, "scheduled")) and waits.total == 2
        assert look.explain(second).delay_reason == "parents"
        assert look.explain(plain).delay_reason != "parents"
    finally:
        look.close()
    run_worker(project)
    ran = project.ran()
    assert sorted(ran) == ["first", "plain", "second", "third"]
    assert ran.index("first") < ran.index("second") < ran.index("third")
