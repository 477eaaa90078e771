"""One rule for the JSON batchq writes, on every backend, checked before any statement (issue 23,
item 3): nesting of at most 31 arrays and objects (MariaDB refuses 32, error 4025) and no NUL
character (PostgreSQL's jsonb refuses \\u0000, 22P05, and aborts the caller's transaction)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from batchq import MessageQueue, PayloadError, Queue
from tests.support.db import app_connection, job_rows, sql
from tests.support.rows import app_write

MAX_JSON_DEPTH = 31  # as docs/guides/enqueue.md documents it


def nested(levels: int) -> Any:
    value: Any = "leaf"
    for level in range(levels):
        value = [value] if level % 2 else {"k": value}
    return value


NUL_PAYLOADS = [
    pytest.param("a\x00b", id="in-a-string"),
    pytest.param({"k\x00": 1}, id="in-a-key"),
    pytest.param({"deep": [["\x00"]]}, id="nested"),
]
# Each way a JSON payload is written; (queue, mq, payload, conn).
Write = Callable[[Queue, MessageQueue, Any, Any], Any]
WRITES: dict[str, Write] = {
    "enqueue": lambda q, mq, p, c: q.enqueue("jobs:noop", p, conn=c),
    "enqueue_many": lambda q, mq, p, c: q.enqueue_many("jobs:noop", ["ok", p], conn=c),
    "send": lambda q, mq, p, c: mq.send("rules", p, conn=c),
    "send_batch": lambda q, mq, p, c: mq.send_batch("rules", ["ok", p], conn=c),
    "headers": lambda q, mq, p, c: mq.send("rules", 1, headers={"h": p}, conn=c),
    "publish": lambda q, mq, p, c: mq.publish("topic", p, conn=c),
}


@pytest.fixture
def rules_mq(db_url: str) -> Any:
    mq = MessageQueue(db_url)
    mq.create_queue("rules")
    mq.subscribe("topic", "sub")
    yield mq
    mq.close()


def nothing_written(queue: Queue) -> bool:
    messages = sql(queue, "SELECT COUNT(*) FROM batchq_message")[0][0]
    return job_rows(queue) == [] and int(messages) == 0


@pytest.mark.parametrize("payload", NUL_PAYLOADS)
@pytest.mark.parametrize("write", WRITES)
def test_nul_is_refused_before_anything_is_sent_and_the_callers_transaction_goes_on(
    queue: Queue, rules_mq: MessageQueue, db_url: str, write: str, payload: Any
) -> None:
    app = app_connection(db_url)
    try:
        app_write(app, 7)
        with pytest.raises(PayloadError, match=r"NUL character \(\\u0000\)"):
            WRITES[write](queue, rules_mq, payload, app)
        app_write(app, 8)  # PostgreSQL: the transaction was not aborted
        app.commit()
    finally:
        app.close()
    assert sql(queue, "SELECT n FROM test_ledger ORDER BY n") == [(7,), (8,)]
    assert nothing_written(queue)


@pytest.mark.parametrize("write", WRITES)
def test_nesting_past_the_limit_is_refused_and_at_the_limit_round_trips(
    queue: Queue, rules_mq: MessageQueue, write: str
) -> None:
    too_deep = nested(MAX_JSON_DEPTH + (0 if write == "headers" else 1))  # headers: {"h": ...}
    with pytest.raises(PayloadError, match=f"nested more than {MAX_JSON_DEPTH} levels"):
        WRITES[write](queue, rules_mq, too_deep, None)
    assert nothing_written(queue)
    deepest = nested(MAX_JSON_DEPTH - (1 if write == "headers" else 0))
    WRITES[write](queue, rules_mq, deepest, None)  # the server takes it too (MariaDB: 31 levels)


def test_deepest_message_and_job_read_back(queue: Queue, rules_mq: MessageQueue) -> None:
    deepest = nested(MAX_JSON_DEPTH)
    rules_mq.send("rules", deepest, headers={"h": nested(MAX_JSON_DEPTH - 1)})
    [message] = rules_mq.read("rules", vt=30)
    assert message.message == deepest and message.headers == {"h": nested(MAX_JSON_DEPTH - 1)}
    queue.enqueue("jobs:noop", deepest)
    assert len(job_rows(queue)) == 1


def test_a_string_that_only_looks_nested_or_escaped_is_stored(queue: Queue, rules_mq: MessageQueue) -> None:
    text = "[{" * 100 + "\\u0000"  # brackets and a backslash-u0000 inside a string are text
    rules_mq.send("rules", {"k": text})
    assert rules_mq.read("rules", vt=30)[0].message == {"k": text}
    queue.enqueue("jobs:noop", text)


def test_schedule_payloads_keep_the_rule(queue: Queue) -> None:
    with pytest.raises(PayloadError, match="NUL character"):
        queue.schedule("nul", "* * * * *", "jobs:noop", payload={"k": "\x00"})
    with pytest.raises(PayloadError, match="nested more than"):
        queue.schedule("deep", "* * * * *", "jobs:noop", payload={"k": nested(MAX_JSON_DEPTH)})
    assert queue.schedules.list() == []
