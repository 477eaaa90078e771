"""Payloads at the size limit leave the caller's transaction intact, and the message filter agrees,
on every backend (issue 9, items 6, 15)."""

from __future__ import annotations

from typing import Any

import pytest

from batchq import MessageQueue, Queue
from tests.support.db import app_connection, job_rows, run_query, sql
from tests.support.messages import Q
from tests.support.rows import app_write, json_string_of


def test_payload_over_the_limit_leaves_the_callers_transaction_intact(queue: Queue, db_url: str) -> None:
    from batchq import PayloadError

    limit = queue.backend.payload_limit()
    app = app_connection(db_url)
    app_write(app, 7)
    with pytest.raises(PayloadError, match="more than this database accepts"):
        queue.enqueue("jobs:noop", json_string_of(limit + 1), conn=app)
    with pytest.raises(PayloadError, match="more than this database accepts"):
        queue.enqueue_many("jobs:noop", ["small", json_string_of(limit + 1)], conn=app)
    app.commit()
    app.close()
    assert job_rows(queue) == []
    assert sql(queue, "SELECT n FROM test_ledger") == [(7,)]


@pytest.mark.backends("sqlite", "postgresql")
def test_payload_at_the_limit_is_stored(queue: Queue) -> None:
    limit = queue.backend.payload_limit()
    job_id = queue.enqueue("jobs:noop", json_string_of(limit))
    [(stored,)] = sql(queue, f"SELECT LENGTH(payload) FROM batchq_job WHERE id = {job_id}")
    assert stored == limit


# -- item 15: the message filter agrees on every backend ------------------------------------------


def test_mq_filter_never_matches_inside_an_array(db_url: str) -> None:
    from batchq import MessageQueue

    mq = MessageQueue(db_url)
    mq.create_queue("arrays")
    docs: list[Any] = [
        {"k": [1, 2]},
        {"k": 1},
        [{"k": 1}],
        {"to": [{"vip": True}]},
        {"to": {"vip": True}},
        {"k": {"a": 1}},
        {"k": [{"a": 1}]},
        {"k": [[1]]},
    ]
    sent = mq.send_batch("arrays", docs)

    def matching(where: dict[str, Any]) -> list[int]:
        got = mq.read("arrays", vt=30, qty=20, where=where)
        for message in got:
            mq.set_vt("arrays", message.msg_id, 0)
        return sorted(message.msg_id for message in got)

    assert matching({"k": 1}) == [sent[1]]
    assert matching({"to": {"vip": True}}) == [sent[4]]
    assert matching({"k": {"a": 1}}) == [sent[5]]
    assert matching({"k": {}}) == [sent[5]]
    assert matching({}) == [sent[i] for i in (0, 1, 3, 4, 5, 6, 7)]  # every object
    mq.close()


# -- issue 23, item 2: a message nested deeper than Python's decoder goes -------------------------

DEEP = "[" * 3000 + "]" * 3000  # stored by SQLite and PostgreSQL; MariaDB refuses past 31 levels


@pytest.mark.backends("sqlite", "postgresql")
@pytest.mark.parametrize("typed", [False, True], ids=["untyped", "typed"])
def test_deeply_nested_message_is_archived_with_its_reason_and_the_others_read(
    queue: Queue, db_url: str, typed: bool
) -> None:
    from batchq import MessageQueue
    from tests.support.db import run_query

    mq = MessageQueue(db_url)
    try:
        mq.create_queue("deep", schema={"type": "array"} if typed else None)
        for _ in range(2):
            run_query(queue, "message_insert_by_hand", {"queue": "deep", "message": DEEP})
        good = mq.send_batch("deep", [[1], [2]])
        assert [m.msg_id for m in mq.read("deep", vt=30, qty=2)] == good[:1] + good[1:2]
        assert mq.read("deep", vt=30) == []
        run_query(queue, "message_insert_by_hand", {"queue": "deep", "message": DEEP})
        last = mq.send("deep", [3])
        popped = mq.pop("deep")
        assert popped is not None and popped.msg_id == last
        reasons = run_query(queue, "archive_reasons", {"queue": "deep"})
        assert len(reasons) == 3
        assert all("cannot be read:" in str(reason) for _, reason in reasons), reasons
        assert all("nested too deeply" in str(reason) for _, reason in reasons)
    finally:
        mq.close()


def test_deeply_nested_schedule_payload_is_reported_not_raised(queue: Queue) -> None:
    """Schedules decode their stored payload too (list, tick): the row is reported with why."""
    queue.schedule("deep", "* * * * *", "jobs:noop", payload={"a": 1})
    mark = "?" if queue.backend.dialect == "sqlite" else "%s"
    sql(queue, f"UPDATE batchq_schedule SET payload = {mark}", (b"[" * 100_000 + b"]" * 100_000,))
    [listed] = queue.schedules.list()
    assert listed.problem is not None and "nested too deeply" in listed.problem


# -- schedules written by hand: the odd row is reported, the others tick ------------------------

# (SET clause, what the report says), for SQLite (which stores any type), PostgreSQL, and all.
ODD_SCHEDULES_SQLITE = [
    pytest.param("priority = 'high'", "priority is 'high', not a whole number", id="text-priority"),
    pytest.param("max_errors = 2.5", "max_errors is 2.5, not a whole number", id="real-max-errors"),
    pytest.param("catch_up_limit = x'01'", "catch_up_limit is b'\\x01'", id="blob-limit"),
    pytest.param("tz = x'555443'", "tz is b'UTC', not text", id="blob-tz"),
    pytest.param("priority = 32768", "bad priority 32768", id="priority-out-of-range"),
    pytest.param("task = x'6a6f62733a6e6f6f70'", "task is b'jobs:noop', not text", id="blob-task"),
    pytest.param("next_exec = 'soon'", "next_exec is not a time", id="next-exec-not-a-time"),
]
ODD_SCHEDULES_POSTGRESQL = [
    pytest.param("next_exec = '-infinity'", "next_exec is not a time", id="next-exec-infinity"),
    pytest.param("next_exec = '0044-03-15 BC'", "next_exec is not a time", id="next-exec-bc"),
]
ODD_SCHEDULES = [
    pytest.param("catch_up_limit = 10001", "bad catch_up_limit 10001", id="limit-too-large"),
    pytest.param("max_errors = 0", "bad max_errors 0", id="max-errors-zero"),
    pytest.param("cron = 'every day'", "cron", id="bad-cron"),
    pytest.param("tz = 'Mars/Olympus'", "Mars/Olympus", id="bad-tz"),
]


def _odd_schedule_is_reported(queue: Queue, assignment: str, reason: str) -> None:
    for name in ("a-bad", "b-good"):
        queue.schedule(name, "* * * * * *", "jobs:noop")
        run_query(
            queue, "schedule_set_next_exec", {"name": name, "at": int(queue.schedules.server_now()) - 5}
        )
    sql(queue, f"UPDATE batchq_schedule SET {assignment} WHERE name = 'a-bad'")
    report = queue.tick()
    assert [job.schedule for job in report.enqueued] == ["b-good"]
    assert [name for name, _ in report.failed] == ["a-bad"] and reason in report.failed[0][1], report
    listed = {s.name: s for s in queue.schedules.list()}
    assert listed["a-bad"].problem and reason in listed["a-bad"].problem
    assert listed["b-good"].problem is None
    assert len(job_rows(queue)) == 1


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("assignment, reason", ODD_SCHEDULES_SQLITE)
def test_odd_schedule_row_of_any_type_is_reported_and_the_others_tick(
    queue: Queue, assignment: str, reason: str
) -> None:
    _odd_schedule_is_reported(queue, assignment, reason)


@pytest.mark.backends("postgresql")
@pytest.mark.parametrize("assignment, reason", ODD_SCHEDULES_POSTGRESQL)
def test_schedule_row_at_a_time_python_cannot_hold_is_reported(
    queue: Queue, assignment: str, reason: str
) -> None:
    _odd_schedule_is_reported(queue, assignment, reason)


@pytest.mark.parametrize("assignment, reason", ODD_SCHEDULES)
def test_odd_schedule_row_is_reported_and_the_others_tick(queue: Queue, assignment: str, reason: str) -> None:
    _odd_schedule_is_reported(queue, assignment, reason)


def test_next_exec_written_by_hand_in_another_precision_fires(queue: Queue) -> None:
    """SQLite: whole seconds, without the fraction batchq writes; MySQL, PostgreSQL: a fraction
    batchq never writes. It is the slot read: fired once, not counted as taken by another."""
    queue.schedule("s", "* * * * * *", "jobs:noop")
    at = int(queue.schedules.server_now()) - 5
    run_query(queue, "schedule_set_next_exec_by_hand", {"name": "s", "at": at})
    report = queue.tick()
    assert (len(report.enqueued), report.taken, report.failed) == (1, 0, [])
    assert len(job_rows(queue)) == 1


@pytest.mark.backends("sqlite")
def test_next_exec_in_iso_form_with_t_is_due_on_its_day(queue: Queue) -> None:
    """'2026-01-01T07:00:00' sorts after '2026-01-01 23:00:00.000' as text: compared as a time."""
    queue.schedule("s", "* * * * * *", "jobs:noop")
    sql(queue, "UPDATE batchq_schedule SET next_exec = strftime('%Y-%m-%dT%H:%M:%S', 'now', '-5 seconds')")
    report = queue.tick()
    assert (len(report.enqueued), report.taken, report.failed) == (1, 0, [])


# -- messages written by hand that cannot be read: archived with why, the queue reads on --------

ODD_MESSAGES = [  # SQLite stores any value in any column
    pytest.param("message = 'not json'", "not valid JSON", id="message-not-json"),
    pytest.param("message = x'ff'", "not valid JSON", id="message-not-utf8"),
    pytest.param("headers = '{'", "not valid JSON", id="headers-not-json"),
    pytest.param("enqueued_at = 'soon'", "'soon'", id="enqueued-at-not-a-time"),
    pytest.param("enqueued_at = x'00'", "is not a time", id="enqueued-at-blob"),
]


def sql_on(mq: MessageQueue, statement: str) -> None:
    conn = mq.backend.conn
    conn.execute(statement)
    conn.commit()


def _odd_message_at_the_head(mq: MessageQueue, assignment: str) -> tuple[int, int]:
    head, behind = mq.send_batch(Q, [{"n": 1}, {"n": 2}])
    sql_on(mq, f"UPDATE batchq_message SET {assignment} WHERE id = {head}")
    return head, behind


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("assignment, reason", ODD_MESSAGES)
def test_unreadable_message_at_the_head_is_archived_and_the_queue_reads_on(
    mq: MessageQueue, assignment: str, reason: str
) -> None:
    head, behind = _odd_message_at_the_head(mq, assignment)
    assert [m.msg_id for m in mq.read(Q, vt=30, qty=5)] == [behind]
    assert mq.read(Q, vt=30) == []  # not back at the head once its vt is over: archived
    [archived] = mq.read_archive(Q)
    assert archived.msg_id == head and archived.reason and reason in archived.reason
    assert f"message {head} cannot be read" in archived.reason


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("assignment, reason", ODD_MESSAGES)
def test_unreadable_message_at_the_head_is_archived_by_pop(
    mq: MessageQueue, assignment: str, reason: str
) -> None:
    head, behind = _odd_message_at_the_head(mq, assignment)
    popped = mq.pop(Q)
    assert popped is not None and popped.msg_id == behind
    assert mq.pop(Q) is None
    [archived] = mq.read_archive(Q)
    assert archived.msg_id == head and archived.reason and reason in archived.reason


@pytest.mark.backends("sqlite")
def test_a_type_stored_as_a_blob_is_read_as_its_text(queue: Queue, db_url: str) -> None:
    """SQLite keeps a type's JSON Schema as whatever it is given: a BLOB is its UTF-8 text."""
    from batchq.errors import PayloadInvalid

    queue.create_queue("typed", schema={"type": "object"})
    sql(queue, "UPDATE batchq_queue SET payload_schema = CAST(payload_schema AS BLOB) WHERE name = 'typed'")
    fresh = Queue(db_url, task_modules=["jobs"])  # no type cached yet
    try:
        with pytest.raises(PayloadInvalid):
            fresh.enqueue("jobs:noop", [1], queue="typed")
        assert fresh.enqueue("jobs:noop", {"a": 1}, queue="typed") > 0
    finally:
        fresh.close()


def test_a_broken_type_fails_its_queues_jobs_and_the_worker_serves_the_others(
    queue: Queue, db_url: str
) -> None:
    """A type written by hand that is no JSON Schema: the jobs of its queue fail with why (a
    human fixes the type, then requeues them); the worker goes on with its other queues."""
    from batchq.runtime.worker import RunOptions, Worker

    queue.create_queue("typed", schema={"type": "object"})
    typed = queue.enqueue("jobs:noop", {"a": 1}, queue="typed")
    plain = queue.enqueue("jobs:noop", queue="plain")
    sql(queue, """UPDATE batchq_queue SET payload_schema = '{"type": 5}' WHERE name = 'typed'""")
    fresh = Queue(db_url, task_modules=["jobs"])  # no type cached yet
    try:
        summary = Worker(fresh, RunOptions(queues=("typed", "plain"))).run()
    finally:
        fresh.close()
    assert plain in summary.job_ids
    [job] = job_rows(queue)
    assert (job["id"], job["status"]) == (typed, "failed")
    assert "the queue's type cannot be used" in job["last_error"]


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize(
    "vt",
    [
        pytest.param("strftime('%Y-%m-%dT%H:%M:%SZ', 'now', '-1 seconds')", id="iso-t-form"),
        pytest.param("'soon'", id="no-time"),
        pytest.param("x'00'", id="blob"),
    ],
)
def test_message_vt_written_by_hand_is_read_as_a_time(mq: MessageQueue, vt: str) -> None:
    """vt compared as a time, not as text: '...T10:00:00Z' sorts after '... 23:00:00.000' and
    'soon' after every date. A vt that is no time is visible now, and the read sets it anew."""
    [msg_id] = mq.send_batch(Q, [{"n": 1}])
    sql_on(mq, f"UPDATE batchq_message SET vt = {vt} WHERE id = {msg_id}")
    assert mq.metrics(Q).queue_visible_length == 1
    [read] = mq.read(Q, vt=30)
    assert read.msg_id == msg_id and read.message == {"n": 1}
    assert mq.read(Q, vt=30) == []  # held now, until its new vt
