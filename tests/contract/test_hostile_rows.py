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
