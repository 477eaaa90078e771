"""Payloads at the size limit leave the caller's transaction intact, and the message filter agrees,
on every backend (issue 9, items 6, 15)."""

from __future__ import annotations

from typing import Any

import pytest

from batchq import Queue
from tests.support.db import app_connection, job_rows, sql
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
        assert all(str(reason).startswith("message cannot be read:") for _, reason in reasons)
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
