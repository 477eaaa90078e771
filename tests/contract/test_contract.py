"""The contract every backend keeps, run against real servers."""

from __future__ import annotations

import datetime
import decimal
import os
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from batchq import ConfigError, PayloadError, Queue, SchemaMissing, TaskError, TaskNotAllowed
from batchq.backends import TransientError
from batchq.runtime.sweeps import gc_error, gc_processing
from batchq.runtime.worker import RunOptions, Worker
from tests.support.cli import invoke_batchq
from tests.support.db import (
    SERVER_URLS,
    app_connection,
    job_rows,
    run_query,
    selected_backends,
    sibling_database_url,
    sql,
)
from tests.support.rows import write_row


def run_worker(queue: Queue, **options: object) -> Worker:
    worker = Worker(queue, RunOptions(**options))  # type: ignore[arg-type]
    worker.run()
    return worker


def test_enqueue_run_delete(queue: Queue, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    job_id = queue.enqueue("jobs:touch", str(marker))
    assert job_rows(queue)[0]["id"] == job_id
    assert job_rows(queue)[0]["status"] == "ready"
    worker = run_worker(queue)
    assert marker.read_text() == "ran"
    assert worker.summary.succeeded == 1
    assert job_rows(queue) == []


def test_enqueue_callable_stores_its_path(queue: Queue) -> None:
    import jobs

    queue.enqueue(jobs.noop)
    queue.enqueue(jobs.registered_touch, "x")
    assert [row["task"] for row in job_rows(queue)] == ["jobs:noop", "registered_touch"]


@pytest.mark.parametrize(
    "task, expected",
    [
        ("jobs:Mailer.static_touch", "static"),
        ("jobs:Mailer.class_touch", "class Mailer"),
        ("jobs:Mailer.touch", "instance Mailer"),
        ("jobs:mailer.touch", "instance Mailer"),
        ("registered_touch", "registered"),
    ],
)
def test_every_callable_form_runs(queue: Queue, tmp_path: Path, task: str, expected: str) -> None:
    marker = tmp_path / "out"
    queue.enqueue(task, str(marker))
    run_worker(queue)
    assert marker.read_text() == expected


def test_fifo_within_priority_and_higher_priority_first(queue: Queue) -> None:
    low = [queue.enqueue("jobs:noop", i) for i in range(3)]
    high = queue.enqueue("jobs:noop", "urgent", priority=5)
    worker = run_worker(queue)
    assert list(worker.summary.job_ids) == [high, *low]


def test_delayed_job_waits_for_the_server_clock(queue: Queue) -> None:
    queue.enqueue("jobs:noop", delay="1h")
    due = queue.enqueue("jobs:noop")
    worker = run_worker(queue)
    assert list(worker.summary.job_ids) == [due]
    [stats] = queue.stats()
    assert (stats.ready, stats.delayed) == (0, 1)


def test_queues_are_separate_and_tried_in_order(queue: Queue) -> None:
    other = queue.enqueue("jobs:noop", queue="mail")
    default = queue.enqueue("jobs:noop")
    assert list(run_worker(queue, queues=("mail",)).summary.job_ids) == [other]
    assert list(run_worker(queue, queues=("mail", "default")).summary.job_ids) == [default]


def test_max_jobs_stops_the_run(queue: Queue) -> None:
    for i in range(5):
        queue.enqueue("jobs:noop", i)
    assert run_worker(queue, max_jobs=2).summary.processed == 2
    assert len(job_rows(queue)) == 3


def test_failure_counts_and_backs_off(queue: Queue) -> None:
    job_id = queue.enqueue("jobs:fail", "x", max_errors=3)
    worker = run_worker(queue, backoff_base=60)
    assert worker.summary.errors == 1
    [row] = job_rows(queue)
    assert (row["status"], row["error_count"]) == ("scheduled", 1)  # waits out its backoff
    assert row["last_error"].startswith("ValueError: boom: 'x'")
    # Not due again before the backoff: a second run finds nothing.
    assert run_worker(queue).summary.processed == 0
    [stats] = queue.stats()
    assert (stats.ready, stats.delayed) == (0, 1)
    assert _seconds_until_due(queue, job_id) == pytest.approx(60, abs=5)


def _seconds_until_due(queue: Queue, job_id: int) -> float:
    [(seconds,)] = run_query(queue, "job_seconds_until_due", {"id": job_id})
    return float(seconds)


def _make_due(queue: Queue) -> None:
    run_query(queue, "jobs_make_due")


def test_fails_for_good_after_max_errors_and_gc_error_requeues(queue: Queue) -> None:
    job_id = queue.enqueue("jobs:return_false", None, max_errors=2)
    run_worker(queue, backoff_base=0)
    _make_due(queue)
    run_worker(queue, backoff_base=0)
    [row] = job_rows(queue)
    assert (row["status"], row["error_count"]) == ("failed", 2)
    assert row["last_error"] == "the task returned False"
    _make_due(queue)
    assert run_worker(queue).summary.processed == 0  # failed jobs are never claimed
    assert [job.id for job in gc_error(queue)] == [job_id]
    [requeued] = gc_error(queue, "requeue")
    assert (requeued.id, requeued.status, requeued.error_count) == (job_id, "ready", 0)
    assert requeued.error_count_before == 2  # as it is now, and what it had
    [row] = job_rows(queue)
    assert (row["status"], row["error_count"]) == ("ready", 0)
    assert gc_error(queue) == []


def test_gc_error_delete_and_filters(queue: Queue) -> None:
    a = queue.enqueue("jobs:fail", None, max_errors=1)
    b = queue.enqueue("jobs:fail", None, max_errors=1, queue="other")
    run_worker(queue, queues=("default", "other"))
    assert [job.id for job in gc_error(queue, queues=["other"])] == [b]
    assert [job.id for job in gc_error(queue, "delete", ids=[a])] == [a]
    assert [row["id"] for row in job_rows(queue)] == [b]


def test_unresolvable_task_fails_the_job_with_the_reason(queue: Queue) -> None:
    # Written directly, as a row from someone else would be.
    queue.enqueue("jobs:noop")
    sql(queue, "UPDATE batchq_job SET task = 'os:system'")
    run_worker(queue)
    [row] = job_rows(queue)
    assert row["error_count"] == 1
    assert "TaskNotAllowed: task 'os:system' is not allowed" in row["last_error"]


def test_cancel_only_an_unclaimed_job(queue: Queue) -> None:
    free = queue.enqueue("jobs:noop")
    claimed = queue.enqueue("jobs:noop")
    assert queue.backend.stores.jobs.claim("default", "elsewhere:1", "t" * 32).jobs[0].id == free
    assert queue.cancel(free) is False  # claimed: stays
    assert queue.cancel(claimed) is True
    assert queue.cancel(claimed) is False  # gone
    assert [row["id"] for row in job_rows(queue)] == [free]


def test_stats_per_queue(queue: Queue) -> None:
    queue.enqueue("jobs:noop")
    queue.enqueue("jobs:noop", delay=3600)
    queue.enqueue("jobs:noop", queue="mail")
    queue.backend.stores.jobs.claim("mail", "elsewhere:1", "t" * 32)
    queue.pause("reports")
    stats = {s.queue: s for s in queue.stats()}
    assert (stats["default"].ready, stats["default"].delayed, stats["default"].processing) == (1, 1, 0)
    assert stats["mail"].processing == 1
    assert 0 <= stats["mail"].oldest_processing_seconds < 60
    assert stats["reports"].paused


def test_pause_and_resume(queue: Queue) -> None:
    queue.enqueue("jobs:noop")
    queue.pause("default")
    assert run_worker(queue).summary.processed == 0
    queue.resume("default")
    assert run_worker(queue).summary.processed == 1


def test_purge_leaves_running_jobs(queue: Queue) -> None:
    running = queue.enqueue("jobs:noop")
    queue.enqueue("jobs:noop")
    queue.enqueue("jobs:noop", queue="other")
    queue.backend.stores.jobs.claim("default", "elsewhere:1", "t" * 32)
    assert queue.purge("default") == 1
    assert [(row["id"], row["queue"]) for row in job_rows(queue)][0] == (running, "default")
    assert len(job_rows(queue)) == 2


def test_a_hand_written_queue_name_can_be_cleared_without_sql(queue: Queue, db_url: str) -> None:
    """A queue name written by plain SQL that today's rules refuse: purge, cancel_where and
    `batchq purge` clear it; a name no queue has is still refused."""
    name = "night batch"  # a space: check_queue_name refuses it
    for status in ("ready", "failed", "ready"):
        write_row(queue, queue=name, status=status)
    running = write_row(queue, queue=name, status="processing", locked_by="elsewhere:1")
    assert queue.cancel_where(name) == 2  # the waiting ones
    assert queue.purge(name) == 1  # the failed one; the running one is left alone
    assert [row["id"] for row in job_rows(queue)] == [running]
    write_row(queue, queue=name)
    result = invoke_batchq(db_url, "purge", name, "--yes")
    assert (result.returncode, result.stdout, result.stderr) == (0, "deleted 1 job\n", "")
    for unknown in ("no such queue", ""):
        with pytest.raises(ConfigError, match="bad queue name"):
            queue.purge(unknown)
    assert [row["id"] for row in job_rows(queue)] == [running]


def test_enqueue_many(queue: Queue) -> None:
    assert queue.enqueue_many("jobs:echo", [{"n": i} for i in range(250)], queue="bulk") == 250
    assert queue.enqueue_many("jobs:echo", []) == 0
    assert run_worker(queue, queues=("bulk",)).summary.succeeded == 250


def test_enqueue_many_keeps_the_payloads_order_and_none(queue: Queue) -> None:
    """Ids follow the payloads' order (PostgreSQL sends them as one array), None included."""
    from batchq.core.serializers import loads

    payloads = [{"n": 1}, None, "x", {"n": 3}]
    assert queue.enqueue_many("jobs:echo", payloads, delay=60) == 4
    rows = sql(queue, "SELECT payload, status FROM batchq_job ORDER BY id")
    assert [loads(row[0], "json", None) for row in rows] == payloads
    assert {row[1] for row in rows} == {"scheduled"}


def test_enqueue_many_over_several_statements_keeps_order(queue: Queue) -> None:
    """More payloads than one INSERT carries (SQLite: 500 rows a statement): all written, ids in
    the payloads' order across the statements."""
    from batchq.core.serializers import loads

    payloads = [{"n": i} for i in range(1203)]
    assert queue.enqueue_many("jobs:echo", payloads, queue="bulk") == 1203
    rows = sql(queue, "SELECT payload FROM batchq_job ORDER BY id")
    assert [loads(row[0], "json", None) for row in rows] == payloads


def test_enqueue_stores_each_calls_own_options(queue: Queue) -> None:
    """enqueue() calls with different options one after the other on one connection each store
    their own (MySQL reuses the escaped statement while the options stay the same)."""
    calls: list[dict[str, Any]] = [
        {"queue": "a", "priority": 0},
        {"queue": "a", "priority": 0},
        {"queue": "b", "priority": 5},
        {"queue": "b", "priority": 5, "max_errors": 3},
        {"queue": "b", "priority": 5, "max_errors": 3, "delay": 60},
        {"queue": "a", "priority": 0},
    ]
    for n, options in enumerate(calls):
        queue.enqueue("jobs:echo", {"n": n}, **options)
    rows = sql(queue, "SELECT queue, priority, max_errors, status FROM batchq_job ORDER BY id")
    expected = [
        (o["queue"], o["priority"], o.get("max_errors", 10), "scheduled" if o.get("delay") else "ready")
        for o in calls
    ]
    assert [tuple(row) for row in rows] == expected


def test_json_payloads_round_trip_including_unicode(queue: Queue, tmp_path: Path) -> None:
    payload = {"text": "héllo wörld 🎉 数据", "n": [1, 2.5, None, True], "nested": {"a": {}}}
    queue.enqueue("jobs:echo", payload)
    [row] = sql(queue, "SELECT payload FROM batchq_job")
    from batchq.core.serializers import loads

    assert loads(row[0], "json", None) == payload


def test_pickle_payload_signed_and_verified(queue: Queue, tmp_path: Path) -> None:
    marker = tmp_path / "pickled"
    queue.enqueue("jobs:touch", str(marker), serializer="pickle")
    run_worker(queue)
    assert marker.read_text() == "ran"


def test_forged_pickle_is_never_unpickled(queue: Queue, tmp_path: Path) -> None:
    import pickle

    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):  # type: ignore[no-untyped-def]
            return (Path.write_text, (marker, "pwned"))

    queue.enqueue("jobs:noop", "x", serializer="pickle")
    forged = b"\0" * 32 + pickle.dumps(Exploit())
    run_query(queue, "jobs_set_payload", {"payload": forged})
    run_worker(queue)
    assert not marker.exists()
    [row] = job_rows(queue)
    assert "SignatureError" in row["last_error"]


def test_corrupt_json_payload_fails_the_job_and_the_worker_goes_on(queue: Queue) -> None:
    queue.enqueue("jobs:noop", {"a": 1})
    good = queue.enqueue("jobs:noop", {"b": 2})
    run_query(queue, "jobs_set_payload_before", {"payload": b"\xff{not json", "id": good})
    worker = run_worker(queue)
    assert (worker.summary.errors, worker.summary.succeeded) == (1, 1)
    [row] = job_rows(queue)
    assert "not valid JSON" in row["last_error"]


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"payload": datetime.datetime(2026, 1, 1)}, PayloadError),
        ({"payload": decimal.Decimal("1.5")}, PayloadError),
        ({"payload": {1, 2}}, PayloadError),
        ({"payload": float("nan")}, PayloadError),
        ({"payload": "\udcff"}, PayloadError),  # a lone surrogate: not UTF-8
        ({"payload": 1, "queue": "bad queue!"}, ConfigError),
        ({"payload": 1, "queue": "x" * 65}, ConfigError),
        ({"payload": 1, "delay": "soon"}, ConfigError),
        ({"payload": 1, "delay": -5}, ConfigError),
        ({"payload": 1, "priority": 10**6}, ConfigError),
        ({"payload": 1, "max_errors": 0}, ConfigError),
        ({"payload": 1, "serializer": "yaml"}, ConfigError),
    ],
)
def test_bad_input_raises_before_anything_is_written(queue: Queue, kwargs: dict, error: type) -> None:
    with pytest.raises(error):
        queue.enqueue("jobs:noop", **kwargs)
    assert job_rows(queue) == []


@pytest.mark.parametrize(
    "task, error, message",
    [
        ("os:system", TaskNotAllowed, "not allowed"),
        ("subprocess:check_call", TaskNotAllowed, "not allowed"),
        ("antigravity", TaskError, "unknown task"),
        ("jobs:missing", TaskError, "has no attribute"),
        ("jobs:not_callable", TaskError, "not a function"),
        ("jobs:NeedsArgs.touch", TaskError, "cannot be created with no arguments"),
        ("jobs:Mailer", TaskError, "not a function"),
        ("not a task", TaskError, "bad task name"),
        ("antigravity:fly", TaskNotAllowed, "not allowed"),
        ("jobs.missing_module:f", TaskNotAllowed, "not in BATCHQ_TASK_MODULES"),  # 'jobs' is not 'jobs.*'
    ],
)
def test_bad_task_refused_at_enqueue(queue: Queue, task: str, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        queue.enqueue(task)
    assert job_rows(queue) == []
    assert "antigravity" not in sys.modules  # refused names are never imported


def test_pickle_needs_a_secret(db_url: str) -> None:
    queue = Queue(db_url, task_modules=["jobs"], secret=None)
    os.environ.pop("BATCHQ_SECRET", None)
    with pytest.raises(ConfigError, match="BATCHQ_SECRET"):
        queue.enqueue("jobs:noop", 1, serializer="pickle")
    assert job_rows(queue) == []
    queue.close()


def test_payload_larger_than_the_server_accepts(queue: Queue) -> None:
    limit = queue.backend.payload_limit()
    with pytest.raises(PayloadError, match="more than this database accepts"):
        queue.enqueue("jobs:noop", "x" * (limit + 1))
    assert job_rows(queue) == []
    assert queue.enqueue("jobs:noop", "still usable") > 0  # the connection is fine


def test_missing_schema_is_a_clear_error(backend_name: str, tmp_path: Path) -> None:
    if backend_name == "sqlite":
        url = f"sqlite:///{tmp_path / 'empty.db'}"
    else:
        url = sibling_database_url(backend_name, "empty")
    queue = Queue(url, task_modules=["jobs"])
    with pytest.raises(SchemaMissing, match="batchq init-db"):
        queue.enqueue("jobs:noop")
    queue.close()


def test_init_db_is_idempotent(queue: Queue) -> None:
    assert queue.init_db() == []
    assert queue.init_db() == []


def test_transactional_enqueue_commit_and_rollback(queue: Queue, db_url: str) -> None:
    app = app_connection(db_url)
    kept = queue.enqueue("jobs:noop", "kept", conn=app)
    app.commit()
    queue.enqueue("jobs:noop", "rolled back", conn=app)
    queue.enqueue_many("jobs:noop", ["also rolled back"] * 3, conn=app)
    app.rollback()
    app.close()
    assert [row["id"] for row in job_rows(queue)] == [kept]


def test_transactional_enqueue_refuses_a_foreign_connection(queue: Queue, tmp_path: Path) -> None:
    import sqlite3

    other = object() if queue.backend.dialect == "sqlite" else sqlite3.connect(tmp_path / "x.db")
    with pytest.raises(ConfigError, match="conn= got"):
        queue.enqueue("jobs:noop", conn=other)


def test_gc_processing_requeues_a_dead_owner_and_reports_a_live_one(queue: Queue) -> None:
    dead_job = queue.enqueue("jobs:noop")
    live_job = queue.enqueue("jobs:noop")
    dead_worker = f"{socket.gethostname()}:{_dead_pid()}"
    queue.backend.stores.jobs.claim("default", dead_worker, "d" * 32)
    # A live worker: this process, holding its liveness lock on a connection of its own.
    live = Queue(
        str(queue.url) if queue.backend.dialect == "sqlite" else _url_with_password(queue),
        task_modules=["jobs"],
    )
    live_name = f"{socket.gethostname()}:{os.getpid()}"
    live.backend.liveness.hold(live_name)
    live.backend.stores.jobs.claim("default", live_name, "l" * 32)

    report = gc_processing(queue, older_than=0)
    assert [job.id for job in report.requeued] == [dead_job]
    assert [job.id for job in report.long_running] == [live_job]
    rows = {row["id"]: row for row in job_rows(queue)}
    assert (rows[dead_job]["status"], rows[dead_job]["error_count"]) == ("ready", 1)
    assert "died while running" in rows[dead_job]["last_error"]
    assert rows[live_job]["status"] == "processing"
    # Below the threshold a live worker's job is not even reported.
    assert gc_processing(queue, older_than=3600).long_running == []
    live.close()


def test_gc_processing_leaves_a_job_whose_owner_it_cannot_tell_for_the_next_sweep(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A liveness read that waits too long or deadlocks (a Galera node donating its state to a
    rejoining one holds reads back) tells nothing: the sweep goes on, and a later one decides."""
    job_id = queue.enqueue("jobs:noop")
    queue.backend.stores.jobs.claim("default", f"{socket.gethostname()}:{_dead_pid()}", "d" * 32)

    def lock_wait(worker: str) -> bool:
        raise TransientError("MySQL error 1205: Lock wait timeout exceeded; try restarting transaction")

    monkeypatch.setattr(queue.backend.liveness, "is_alive", lock_wait)
    report = gc_processing(queue, older_than=0)
    assert report.requeued == [] and [job.id for job in report.long_running] == [job_id]
    assert report.long_running[0].worker_alive is None
    [row] = job_rows(queue)
    assert row["status"] == "processing"
    monkeypatch.undo()
    assert [job.id for job in gc_processing(queue).requeued] == [job_id]


def _url_with_password(queue: Queue) -> str:
    return SERVER_URLS[queue.backend.dialect]


def _dead_pid() -> int:
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_late_finish_after_a_sweep_changes_nothing(queue: Queue) -> None:
    """Fencing: the old owner's DELETE after gc took the job back matches 0 rows."""
    job_id = queue.enqueue("jobs:noop")
    [job] = queue.backend.stores.jobs.claim("default", f"{socket.gethostname()}:{_dead_pid()}", "a" * 32).jobs
    assert gc_processing(queue).requeued[0].id == job_id
    [new_owner] = queue.backend.stores.jobs.claim("default", "other:1", "b" * 32).jobs
    assert new_owner.id == job.id
    assert queue.backend.stores.jobs.delete_jobs([job]) == 0
    assert job_rows(queue)[0]["status"] == "processing"
    assert queue.backend.stores.jobs.delete_jobs([new_owner]) == 1


def test_two_sweeps_do_not_double_count(queue: Queue) -> None:
    queue.enqueue("jobs:noop")
    queue.backend.stores.jobs.claim("default", f"{socket.gethostname()}:{_dead_pid()}", "a" * 32)
    other = Queue(str(queue.url) if queue.backend.dialect == "sqlite" else _url_with_password(queue))
    jobs_first = gc_processing(queue).requeued
    jobs_second = gc_processing(other).requeued
    assert len(jobs_first) + len(jobs_second) == 1
    assert job_rows(queue)[0]["error_count"] == 1
    other.close()


@pytest.mark.parametrize("skew_minutes", [-10, 10])
def test_app_clock_skew_changes_nothing(queue: Queue, skew_minutes: int) -> None:
    """Due times, ages and liveness come from the database server, never from the app's clock."""
    from freezegun import freeze_time

    skewed = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=skew_minutes)
    with freeze_time(skewed, tick=True):
        due = queue.enqueue("jobs:noop")
        queue.enqueue("jobs:noop", delay=120)
        assert list(run_worker(queue).summary.job_ids) == [due]  # due at once; the delayed one waits
        claimed = queue.enqueue("jobs:noop")
        queue.backend.stores.jobs.claim("default", f"{socket.gethostname()}:{_dead_pid()}", "c" * 32)
        [stats] = queue.stats()
        assert stats.delayed == 1 and 0 <= stats.oldest_processing_seconds < 60
        assert [job.id for job in gc_processing(queue).requeued] == [claimed]


def test_error_text_with_emoji_and_invalid_utf8_is_stored(queue: Queue) -> None:
    queue.enqueue("jobs:raise_unicode")
    run_worker(queue)
    [row] = job_rows(queue)
    assert row["last_error"].startswith("RuntimeError: 💥 données ? invalid")


def test_batch_mode_claims_many_and_deletes_successes_together(queue: Queue) -> None:
    ids = [queue.enqueue("jobs:noop", i) for i in range(7)]
    failing = queue.enqueue("jobs:fail", "x")
    urgent = queue.enqueue("jobs:noop", "first", priority=9)
    worker = run_worker(queue, batch_size=4)
    assert list(worker.summary.job_ids) == [urgent, *ids, failing]  # claim order, batch after batch
    assert (worker.summary.succeeded, worker.summary.errors) == (8, 1)
    [row] = job_rows(queue)
    assert (row["id"], row["status"], row["error_count"]) == (failing, "scheduled", 1)


def test_a_success_is_deleted_in_the_transaction_that_claims_the_next(
    queue: Queue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One commit per job: job k's DELETE commits with the claim of job k+1, the last one alone."""
    ids = [queue.enqueue("jobs:noop", i) for i in range(3)]
    seen: list[list[tuple[int, str]]] = []
    claims: list[tuple[int, int]] = []  # (finished jobs handed to the claim, jobs it claimed)
    claim = queue.backend.stores.jobs.claim

    def watched_claim(*args: Any, **kwargs: Any) -> Any:
        result = claim(*args, **kwargs)
        claims.append((len(kwargs.get("done", args[4] if len(args) > 4 else ())), len(result.jobs)))
        return result

    monkeypatch.setattr(queue.backend.stores.jobs, "claim", watched_claim)
    worker = run_worker(queue, handler=lambda payload: seen.append(_states(queue)))
    assert seen == [
        [(ids[0], "processing"), (ids[1], "ready"), (ids[2], "ready")],
        [(ids[1], "processing"), (ids[2], "ready")],  # job 0 went when job 1 was claimed
        [(ids[2], "processing")],
    ]
    assert claims == [(0, 1), (1, 1), (1, 1), (1, 0)]  # the last DELETE with an empty claim
    assert worker.summary.succeeded == 3
    assert job_rows(queue) == []


def _states(queue: Queue) -> list[tuple[int, str]]:
    return [(row["id"], row["status"]) for row in job_rows(queue)]


def test_batch_mode_respects_max_jobs_and_releases_what_it_will_not_run(queue: Queue) -> None:
    for i in range(10):
        queue.enqueue("jobs:noop", i)
    assert run_worker(queue, batch_size=4, max_jobs=6).summary.processed == 6
    assert [row["status"] for row in job_rows(queue)] == ["ready"] * 4
    worker = Worker(queue, RunOptions(batch_size=4))
    worker.stop()  # told to stop: claims nothing, leaves nothing claimed
    assert worker.run().processed == 0
    jobs = queue.backend.stores.jobs.claim("default", "w:1", "t" * 32, 3).jobs
    assert len(jobs) == 3
    assert queue.backend.stores.jobs.release_jobs(jobs) == 3
    assert [row["status"] for row in job_rows(queue)] == ["ready"] * 4


@pytest.mark.backends("mysql", "postgresql")
def test_lock_wait_timeouts_are_retried_and_counted(queue: Queue, db_url: str) -> None:
    """A lock wait that times out is retried with backoff, counted, and never reaches the caller."""
    import threading

    job_id = queue.enqueue("jobs:noop")
    run_query(queue, "lock_wait_short")
    holder = app_connection(db_url)
    holder.cursor().execute(f"SELECT id FROM batchq_job WHERE id = {job_id} FOR UPDATE")
    # 1.5 s: 8 tries of PostgreSQL's 300 ms lock timeout wait 2.4 s even with no backoff at all
    # (2.5 s failed once when the random backoffs came out short).
    threading.Timer(1.5, holder.rollback).start()
    assert queue.cancel(job_id) is True  # waited out the lock through retries
    assert queue.backend.transient_retries >= 1
    holder.close()


def test_server_urls_are_reachable() -> None:
    """CI must never pass by skipping: every configured server answers."""
    for name in selected_backends():
        if name != "sqlite":
            Queue(SERVER_URLS[name]).backend.conn  # noqa: B018 - raises if unreachable
