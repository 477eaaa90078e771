"""Hostile and odd rows met by `batchq run` and `gc-processing`, and concurrent init-db
(issue 9, items 10, 11, 15).

Rows here are written with plain SQL (tests/sql: job_insert), as anyone with write access to
the tables could write them. Each must be handled (failed with a reason, or reported for a
human) while the jobs behind it proceed.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from batchq import Queue
from tests.support.cli import invoke_batchq
from tests.support.dashboard import dashboard
from tests.support.db import drop_database, fresh_database_url, job_rows, run_query, sibling_database, sql
from tests.support.processes import run_batchq, start_batchq
from tests.support.rows import (
    ERROR_COUNT_MAX,
    dead_worker,
    good_job,
    no_traceback,
    processing,
    row,
    run_then_sweep,
    write_row,
)


@pytest.mark.parametrize("error_count", [1024, 65533])
def test_max_errors_65535_failures_near_the_limit_back_off(
    queue: Queue, db_url: str, tmp_path: Path, error_count: int
) -> None:
    failing = write_row(queue, task="jobs:fail", max_errors=65535, error_count=error_count)
    good, marker = good_job(queue, tmp_path)
    ran = run_batchq(db_url, "run")
    assert ran.returncode == 0, ran.stderr
    no_traceback(ran)
    assert marker.exists()
    job = row(queue, failing)
    assert (job["status"], job["error_count"]) == ("scheduled", error_count + 1)
    [stats] = queue.stats()
    assert stats.delayed == 1  # pushed back by the capped backoff, an hour


# -- item 11: a row at the error_count column's maximum -----------------------------------------


def test_error_count_at_its_maximum_fails_the_job_in_the_worker(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    top = ERROR_COUNT_MAX[queue.backend.dialect]
    hostile = write_row(queue, task="jobs:fail", error_count=top, max_errors=65535)
    good, marker = good_job(queue, tmp_path)
    ran = run_batchq(db_url, "run")
    assert ran.returncode == 0, ran.stderr
    no_traceback(ran)
    assert marker.exists()
    job = row(queue, hostile)
    assert job["status"] == "failed" and int(job["error_count"]) == top
    assert "boom" in job["last_error"]


def test_error_count_at_its_maximum_does_not_stop_gc_processing(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    top = ERROR_COUNT_MAX[queue.backend.dialect]
    gone = dead_worker()
    hostile = write_row(queue, **processing(queue, gone, error_count=top, max_errors=65535))
    behind = write_row(queue, **processing(queue, gone, task="jobs:touch"), payload=None)
    swept = invoke_batchq(db_url, "gc-processing")
    assert swept.returncode == 3, swept.stderr
    no_traceback(swept)
    assert f"#{hostile}" in swept.stdout and f"#{behind}" in swept.stdout
    assert row(queue, hostile)["status"] == "failed"
    assert int(row(queue, hostile)["error_count"]) == top
    assert row(queue, behind)["status"] == "ready"


# -- item 11: processing rows with NULL processing_at or claim_token ------------------------------


def test_processing_at_null_is_put_back_and_the_report_prints(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    gone = dead_worker()
    hostile = write_row(queue, **processing(queue, gone, claimed_an_hour_ago=False))  # processing_at NULL
    good, marker = good_job(queue, tmp_path)
    ran, swept = run_then_sweep(db_url)
    assert ran.returncode == 0 and marker.exists(), ran.stderr
    assert swept.returncode == 3, swept.stderr
    no_traceback(swept)
    assert f"#{hostile}" in swept.stdout and "unknown" in swept.stdout
    assert row(queue, hostile)["status"] == "ready"
    assert run_batchq(db_url, "run").returncode == 0
    assert job_rows(queue) == []


def test_processing_at_null_of_a_live_worker_is_reported(queue: Queue, db_url: str) -> None:
    live = Queue(db_url, task_modules=["jobs"])
    name = f"{socket.gethostname()}:{os.getpid()}"  # this process: alive on every backend
    live.backend.liveness.hold(name)
    try:
        hostile = write_row(queue, **processing(queue, name, claimed_an_hour_ago=False))  # processing_at NULL
        swept = invoke_batchq(db_url, "gc-processing")
        assert swept.returncode == 3, swept.stderr
        no_traceback(swept)
        assert f"#{hostile}" in swept.stdout and "still running" in swept.stdout
        assert "unknown" in swept.stdout
        assert row(queue, hostile)["status"] == "processing"
    finally:
        live.close()


def test_null_claim_token_of_a_dead_worker_is_put_back_and_said(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    hostile = write_row(queue, **processing(queue, dead_worker(), claim_token=None))
    swept = invoke_batchq(db_url, "gc-processing")
    assert swept.returncode == 3, swept.stderr
    no_traceback(swept)
    assert f"#{hostile}" in swept.stdout and "no claim token" in swept.stdout
    assert row(queue, hostile)["status"] == "ready"
    good, marker = good_job(queue, tmp_path)
    assert run_batchq(db_url, "run").returncode == 0
    assert marker.exists() and job_rows(queue) == []


def test_null_owner_is_put_back(queue: Queue, db_url: str) -> None:
    hostile = write_row(queue, **processing(queue, None))
    swept = invoke_batchq(db_url, "gc-processing")
    assert swept.returncode == 3, swept.stderr
    no_traceback(swept)
    assert f"#{hostile}" in swept.stdout
    assert row(queue, hostile)["status"] == "ready"


# -- item 11: odd values in a ready row ---------------------------------------------------------


ODD_READY_ROWS = [
    pytest.param({"serializer": "yaml", "payload": b"1"}, "unknown serializer", id="odd-serializer"),
    pytest.param({"serializer": "", "payload": b"1"}, "unknown serializer", id="empty-serializer"),
    pytest.param({"task": ""}, "bad task name", id="empty-task"),
    pytest.param({"task": "not a task; rm -rf /"}, "bad task name", id="task-not-a-name"),
    pytest.param({"task": "os:system", "payload": b'"touch /tmp/x"'}, "not allowed", id="task-os-system"),
    pytest.param({"payload": b"\xff\xfe{"}, "not valid", id="payload-not-utf8"),
    pytest.param({"payload": b"[" * 100_000}, "not valid JSON", id="payload-nested-deep"),
    pytest.param({"serializer": "pickle", "payload": b"\x80\x04K\x01."}, "signature", id="unsigned-pickle"),
]


@pytest.mark.parametrize("values, reason", ODD_READY_ROWS)
def test_odd_ready_row_fails_with_its_reason_and_the_next_job_runs(
    queue: Queue, db_url: str, tmp_path: Path, values: dict[str, Any], reason: str
) -> None:
    hostile = write_row(queue, **values)
    good, marker = good_job(queue, tmp_path)
    ran, swept = run_then_sweep(db_url)
    assert ran.returncode == 0, ran.stderr
    no_traceback(ran)
    assert marker.exists()
    job = row(queue, hostile)
    assert job["status"] == "scheduled" and job["error_count"] == 1
    assert reason in job["last_error"]
    assert swept.returncode == 0 and swept.stdout == "", swept.stdout + swept.stderr


def test_priorities_at_the_column_limits_run(queue: Queue, db_url: str) -> None:
    low = write_row(queue, priority=-32768)
    high = write_row(queue, priority=32767)
    ran = run_batchq(db_url, "-vv", "run")
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.index(f"job {high} ") < ran.stderr.index(f"job {low} ")
    assert job_rows(queue) == []


@pytest.mark.parametrize("batch", ["1", "10"])
def test_run_at_far_past_runs_and_far_future_waits(
    queue: Queue, db_url: str, tmp_path: Path, batch: str
) -> None:
    first = write_row(queue)
    run_query(queue, "job_set_run_at_far_past", {"id": first})
    later = write_row(queue)
    run_query(queue, "job_set_run_at_far_future", {"id": later})
    good, marker = good_job(queue, tmp_path)
    ran = run_batchq(db_url, "run", "--batch", batch)
    assert ran.returncode == 0, ran.stderr
    no_traceback(ran)
    assert marker.exists()
    assert [r["id"] for r in job_rows(queue)] == [later]
    assert first not in [r["id"] for r in job_rows(queue)]
    stats = invoke_batchq(db_url, "stats")
    assert stats.returncode == 0, stats.stderr


def test_four_concurrent_init_db_on_an_empty_database(backend_name: str, tmp_path: Path) -> None:
    for attempt in range(6):
        name = f"rows_init_{attempt}"
        url = fresh_database_url(backend_name, tmp_path, name)
        try:
            procs = [start_batchq(url, "init-db") for _ in range(4)]
            results = [(proc.wait(timeout=120), proc.stderr.read()) for proc in procs if proc.stderr]
            assert [code for code, _ in results] == [0] * 4, results
            assert all(err == "" for _, err in results), results
            queue = Queue(url, task_modules=["jobs"])
            assert queue.init_db() == []  # every migration recorded once
            assert queue.enqueue("jobs:noop") > 0
            queue.close()
        finally:
            if backend_name != "sqlite":
                drop_database(backend_name, sibling_database(backend_name, name))


# -- issue 23, item 2: a row nested deeper than Python's decoder goes, on a typed queue ----------

DEEP = b"[" * 100_000 + b"]" * 100_000  # valid JSON, beyond Python's recursion limit


def test_deeply_nested_row_of_a_typed_queue_fails_with_its_reason(
    queue: Queue, db_url: str, tmp_path: Path
) -> None:
    queue.create_queue("default", schema={"type": ["array", "string"]})
    hostile = write_row(queue, payload=DEEP)
    good, marker = good_job(queue, tmp_path)
    ran, swept = run_then_sweep(db_url)
    assert ran.returncode == 0, ran.stderr
    no_traceback(ran)
    assert marker.exists()
    job = row(queue, hostile)
    assert job["status"] == "failed" and job["error_count"] == 1
    assert "nested too deeply" in job["last_error"]
    assert swept.returncode == 0 and swept.stdout == "", swept.stdout + swept.stderr
    # Changing the type reads every waiting row too: it counts this one, without a traceback.
    write_row(queue, payload=DEEP)
    assert queue.alter_queue("default", schema={"type": "array"}, force=True) == 1


# -- a schedule row written by hand: tick, list, --json and the dashboard report it -------------

ODD_SCHEDULE_BY_BACKEND = {  # what each backend's column types let a hand write
    "sqlite": ("priority = 'high'", "priority is 'high', not a whole number"),
    "mysql": ("max_errors = 0", "bad max_errors 0"),
    "postgresql": ("next_exec = '-infinity'", "next_exec is not a time"),
}


def test_odd_schedule_row_is_reported_by_every_reader_and_the_others_tick(
    queue: Queue, db_url: str, backend_name: str
) -> None:
    assignment, reason = ODD_SCHEDULE_BY_BACKEND[backend_name]
    for name in ("a-bad", "b-good"):
        queue.schedule(name, "* * * * * *", "jobs:noop")
        run_query(
            queue, "schedule_set_next_exec", {"name": name, "at": int(queue.schedules.server_now()) - 5}
        )
    sql(queue, f"UPDATE batchq_schedule SET {assignment} WHERE name = 'a-bad'")
    ticked = invoke_batchq(db_url, "tick")
    assert ticked.returncode == 1, ticked.stderr
    no_traceback(ticked)
    assert "a-bad" in ticked.stderr and reason in ticked.stderr
    assert len(job_rows(queue)) == 1  # b-good's
    listed = invoke_batchq(db_url, "schedule", "list")
    assert listed.returncode == 0, listed.stderr
    assert "b-good" in listed.stdout and reason in listed.stdout
    as_json = invoke_batchq(db_url, "schedule", "list", "--json")
    assert as_json.returncode == 0, as_json.stderr
    problems = {s["name"]: s["problem"] for s in json.loads(as_json.stdout)}
    assert reason in problems["a-bad"] and problems["b-good"] is None
    with dashboard(db_url) as board:
        page = board.get("/schedules")
        assert page.status == 200 and "b-good" in page.body and reason.replace("'", "&#39;") in page.body


# -- a message written by hand that cannot be read, at the head of a subscription's queue ---------


@pytest.mark.backends("sqlite")
def test_consume_archives_an_unreadable_message_and_handles_the_others(queue: Queue, db_url: str) -> None:
    from batchq import MessageQueue

    mq = MessageQueue(db_url)
    mq.subscribe("orders", "billing")
    mq.publish("orders", {"n": 0})
    conn = mq.backend.conn
    conn.execute("UPDATE batchq_message SET message = 'not json' WHERE queue = 'orders:billing'")
    conn.commit()
    for n in range(1, 4):
        mq.publish("orders", {"n": n})
    ran = run_batchq(
        db_url,
        "consume",
        "--subscriber",
        "billing",
        "--wait",
        "0",
        "-v",
        BATCHQ_TASK_MODULES="pubsub_handlers",
        PUBSUB_LEDGER="1",
    )
    assert ran.returncode == 0, ran.stderr
    no_traceback(ran)
    assert "archived unread" in ran.stderr and "cannot be read" in ran.stderr
    [archived] = mq.read_archive("orders:billing", reason=None)
    assert archived.message == "not json" and "not valid JSON" in (archived.reason or "")
    assert [int(n) for (n,) in sql(queue, "SELECT n FROM test_ledger ORDER BY n")] == [1, 2, 3]
    mq.close()


# -- odd rows in the other tables: every reader reports or shows them and goes on ----------------


@pytest.mark.backends("sqlite")
def test_odd_rows_in_every_table_leave_every_reader_going(queue: Queue, db_url: str) -> None:
    """SQLite stores any value in any column: BLOBs for text, numbers for payloads, text for
    times, counts too large. The CLI's readers answer without a traceback, the dashboard's pages
    without a 500, and the good rows are still there."""
    from batchq import MessageQueue

    failing = queue.enqueue("jobs:fail", max_errors=1)
    assert run_batchq(db_url, "run").returncode == 0
    numeric, odd = write_row(queue), write_row(queue)
    mq = MessageQueue(db_url)
    for name in ("good-mq", "odd-mq"):
        mq.create_queue(name)
    mq.subscribe("orders", "billing")
    queue.schedule("nightly", "0 3 * * *", "jobs:noop")
    queue.schedule("odd-payload", "0 4 * * *", "jobs:noop")
    for statement in (
        f"UPDATE batchq_job SET payload = -1, queue = 'good' WHERE id = {numeric}",
        f"UPDATE batchq_job SET queue = x'6f6464' WHERE id = {odd}",
        f"UPDATE batchq_job SET last_error = x'ff', task = x'6a6f62733a6661696c' WHERE id = {failing}",
        "INSERT INTO batchq_queue (name, paused) VALUES (NULL, 1)",
        "UPDATE batchq_mq_meta SET created_at = 'soon' WHERE queue = 'odd-mq'",
        "UPDATE batchq_mq_sent SET sent = 1e308 WHERE queue = 'odd-mq'",
        "UPDATE batchq_mq_subscription SET created_at = x'00'",
        "UPDATE batchq_schedule SET payload = -1 WHERE name = 'odd-payload'",
    ):
        sql(queue, statement)
    for args in (
        ("stats",),
        ("stats", "--json"),
        ("gc-error",),
        ("schedule", "list"),
        ("schedule", "list", "--json"),
    ):
        read = invoke_batchq(db_url, *args)
        no_traceback(read)
        assert read.returncode in (0, 3), (args, read.stderr)  # gc-error: 3, failed jobs to report
    stats = json.loads(invoke_batchq(db_url, "stats", "--json").stdout)
    assert {"good", "odd", "default"} <= {s["queue"] for s in stats["queues"]}
    assert f"#{failing}" in invoke_batchq(db_url, "gc-error").stdout
    assert "odd-payload" in invoke_batchq(db_url, "schedule", "list").stdout
    assert [info.queue_name for info in mq.list_queues()] == ["good-mq", "odd-mq", "orders:billing"]
    assert "good-mq" in [m.queue_name for m in mq.metrics_all()]
    assert [s.subscriber for s in mq.subscriptions("orders")] == ["billing"]
    with dashboard(db_url) as board:
        for page in ("/", "/failures", f"/jobs/{numeric}", f"/jobs/{failing}", "/schedules", "/metrics"):
            assert board.get(page).status == 200, page
    mq.close()


@pytest.mark.backends("postgresql")
def test_times_python_cannot_hold_leave_every_reader_going(queue: Queue, db_url: str) -> None:
    """PostgreSQL keeps times from 4713 BC to 294276 AD, and infinity: a row written by hand
    with one no longer fails the whole query of a listing (psycopg cannot make a datetime of it)."""
    from batchq.ops.registry import Registration

    failing = queue.enqueue("jobs:fail", max_errors=1)
    assert run_batchq(db_url, "run").returncode == 0
    Registration(queue.backend, "far:1:00000001", ["default"]).register()
    queue.lock("reindex", ttl=600).acquire()
    for statement in (
        f"UPDATE batchq_job SET last_error_at = 'infinity', created_at = '-infinity' WHERE id = {failing}",
        "UPDATE batchq_worker SET last_seen = 'infinity', started_at = '4000-01-01 BC'",
        "UPDATE batchq_lock SET taken_at = '4000-01-01 BC'",
    ):
        sql(queue, statement)
    errors = invoke_batchq(db_url, "gc-error")
    assert errors.returncode == 3 and f"#{failing}" in errors.stdout, errors.stdout + errors.stderr
    for args in (("status",), ("status", "--json"), ("locks",), ("stats",), ("explain", str(failing))):
        read = invoke_batchq(db_url, *args)
        assert read.returncode == 0, (args, read.stderr)
    with dashboard(db_url) as board:
        for page in ("/failures", "/workers", "/locks", f"/jobs/{failing}"):
            assert board.get(page).status == 200, page
