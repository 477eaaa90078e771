"""The message-queue API (batchq.MessageQueue), on every backend, against real servers."""

from __future__ import annotations

import json
import math
import threading
import time
from datetime import datetime, timezone
from typing import Any

import pytest

from batchq import ConfigError, MessageHeld, MessageQueue, PayloadError, Queue, QueueNotFound
from batchq.backends import create_backend
from tests.support.db import app_connection, sql
from tests.support.messages import Q, ids, raw
from tests.support.processes import wait_for

# -- sending and reading ---------------------------------------------------------------


def test_read_is_fifo_by_id_and_counts_reads(mq: MessageQueue) -> None:
    sent = [mq.send(Q, {"n": n}) for n in range(5)]
    assert sent == sorted(sent)

    first = mq.read(Q, vt=30, qty=2)
    assert ids(first) == sent[:2]
    assert [m.message for m in first] == [{"n": 0}, {"n": 1}]
    assert [m.read_ct for m in first] == [1, 1]
    assert all(m.vt > m.enqueued_at for m in first)

    assert ids(mq.read(Q, vt=30, qty=10)) == sent[2:]
    assert mq.read(Q, vt=30) == []


def test_send_batch_headers_and_any_json(mq: MessageQueue) -> None:
    values = [{"a": [1, 2]}, "text", 3.5, None, ["x"], True]
    sent = mq.send_batch(Q, values, headers={"trace": "abc"})
    assert len(sent) == len(values) and sent == sorted(sent)
    got = mq.read(Q, vt=30, qty=10)
    assert [m.message for m in got] == values
    assert all(m.headers == {"trace": "abc"} for m in got)
    assert mq.send_batch(Q, []) == []


def test_message_whose_visibility_ran_out_is_read_again(mq: MessageQueue) -> None:
    msg_id = mq.send(Q, {"job": 1})
    assert ids(mq.read(Q, vt=0.3)) == [msg_id]
    assert mq.read(Q, vt=0.3) == []  # held

    again = wait_for(lambda: mq.read(Q, vt=30), timeout=10)
    assert ids(again) == [msg_id]
    assert again[0].read_ct == 2


def test_set_vt_extends_and_shortens_a_hold(mq: MessageQueue) -> None:
    msg_id = mq.send(Q, "x")
    mq.read(Q, vt=0.3)
    extended = mq.set_vt(Q, msg_id, 30)
    assert extended is not None and extended.msg_id == msg_id and extended.read_ct == 1
    time.sleep(0.5)
    assert mq.read(Q, vt=30) == []  # would be visible again without the extension

    mq.set_vt(Q, msg_id, 0)  # give it back at once
    again = mq.read(Q, vt=30)
    assert ids(again) == [msg_id] and again[0].read_ct == 2

    assert mq.set_vt(Q, 10**12, 5) is None


def test_read_ct_is_a_receipt_against_a_consumer_whose_hold_ran_out(mq: MessageQueue) -> None:
    msg_id = mq.send(Q, "job")
    [first] = mq.read(Q, vt=0.3)  # a slow consumer...
    [second] = wait_for(lambda: mq.read(Q, vt=30), timeout=10)  # ...whose hold ran out
    assert (first.read_ct, second.read_ct) == (1, 2)

    assert mq.set_vt(Q, msg_id, 60, read_ct=first.read_ct) is None
    assert mq.delete(Q, msg_id, read_ct=first.read_ct) is False
    assert mq.archive(Q, msg_id, read_ct=first.read_ct) is False
    assert mq.get(Q, msg_id) is not None  # still the second consumer's

    extended = mq.set_vt(Q, msg_id, 60, read_ct=second.read_ct)
    assert extended is not None and extended.read_ct == 2
    assert mq.delete(Q, msg_id, read_ct=second.read_ct) is True
    with pytest.raises(ConfigError, match="read_ct"):
        mq.delete(Q, msg_id, read_ct="2")  # type: ignore[arg-type]


def test_delayed_message_becomes_visible(mq: MessageQueue) -> None:
    msg_id = mq.send(Q, "later", delay=0.3)
    assert mq.read(Q, vt=30) == []
    assert mq.metrics(Q).queue_visible_length == 0
    assert ids(wait_for(lambda: mq.read(Q, vt=30), timeout=10)) == [msg_id]


def test_read_with_poll_waits_for_a_message(mq: MessageQueue) -> None:
    started = time.monotonic()
    assert mq.read_with_poll(Q, vt=30, qty=1, max_poll_seconds=0.3, poll_interval_ms=50) == []
    assert time.monotonic() - started >= 0.3

    msg_id = mq.send(Q, "soon", delay=0.2)
    got = mq.read_with_poll(Q, vt=30, qty=5, max_poll_seconds=10, poll_interval_ms=20)
    assert ids(got) == [msg_id]


def test_pop_delete_and_archive(backend_name: str, db_url: str, mq: MessageQueue) -> None:
    a, b, c = mq.send_batch(Q, ["a", "b", "c"])
    popped = mq.pop(Q)
    assert popped is not None and popped.msg_id == a and popped.message == "a"
    assert mq.get(Q, a) is None

    [read_b] = mq.read(Q, vt=30)
    assert mq.archive(Q, read_b.msg_id) is True
    assert mq.archive(Q, read_b.msg_id) is False
    assert mq.delete(Q, c) is True
    assert mq.delete(Q, c) is False
    assert mq.pop(Q) is None

    rows = sql(_queue(db_url), "SELECT id, queue, read_ct, archived_at, message FROM batchq_message_archive")
    assert len(rows) == 1
    archived_id, queue_name, read_ct, archived_at, message = rows[0]
    if backend_name != "postgresql":  # psycopg decodes jsonb itself
        message = json.loads(message)
    assert (archived_id, queue_name, read_ct, message) == (b, Q, 1, "b")
    assert archived_at is not None
    assert mq.metrics(Q).queue_length == 0


def test_batch_delete_and_archive(mq: MessageQueue) -> None:
    sent = mq.send_batch(Q, list(range(6)))
    assert mq.delete_batch(Q, [sent[1], sent[0], 10**12]) == [sent[0], sent[1]]
    assert mq.archive_batch(Q, [sent[3], sent[2], sent[2]]) == [sent[2], sent[3]]
    assert mq.archive_batch(Q, [sent[2]]) == []
    assert mq.delete_batch(Q, []) == []
    assert ids(mq.read(Q, vt=30, qty=10)) == sent[4:]


def test_purge_removes_every_message_but_not_the_total(mq: MessageQueue) -> None:
    mq.send_batch(Q, [1, 2, 3])
    mq.read(Q, vt=30)  # a held message is purged too
    other = "other"
    mq.create_queue(other)
    mq.send(other, "stays")

    assert mq.purge_queue(Q) == 3
    metrics = mq.metrics(Q)
    assert (metrics.queue_length, metrics.total_messages) == (0, 3)
    assert metrics.oldest_msg_age_sec is None and metrics.newest_msg_age_sec is None
    assert mq.metrics(other).queue_length == 1
    assert [(m.queue_name, m.queue_length) for m in mq.metrics_all()] == [(Q, 0), (other, 1)]


def test_metrics(mq: MessageQueue) -> None:
    mq.send(Q, "old")
    time.sleep(0.3)
    mq.send_batch(Q, ["new", "newer"])
    mq.send(Q, "delayed", delay=60)
    mq.read(Q, vt=30)
    metrics = mq.metrics(Q)
    assert metrics.queue_name == Q
    assert metrics.queue_length == 4
    assert metrics.queue_visible_length == 2  # one held, one delayed
    assert metrics.total_messages == 4
    assert metrics.oldest_msg_age_sec is not None and metrics.newest_msg_age_sec is not None
    assert metrics.oldest_msg_age_sec >= metrics.newest_msg_age_sec + 0.25
    assert 0 <= metrics.newest_msg_age_sec < 30
    assert metrics.scrape_time.tzinfo is not None
    assert abs((metrics.scrape_time - datetime.now(timezone.utc)).total_seconds()) < 60


def test_queue_management(mq: MessageQueue) -> None:
    assert mq.create_queue(Q) is False  # exists (the fixture made it)
    assert mq.create_queue("b.queue") is True
    assert [q.queue_name for q in mq.list_queues()] == ["b.queue", Q]
    assert all(q.created_at.tzinfo is not None for q in mq.list_queues())

    mq.send("b.queue", 1)
    assert mq.drop_queue("b.queue") is True
    assert mq.drop_queue("b.queue") is False
    assert [q.queue_name for q in mq.list_queues()] == [Q]
    with pytest.raises(QueueNotFound, match="create_queue"):
        mq.send("b.queue", 1)
    for call in (mq.metrics, mq.purge_queue, mq.pop, lambda q: mq.read(q, vt=1)):
        with pytest.raises(QueueNotFound):
            call("b.queue")
    with pytest.raises(QueueNotFound):
        mq.read_with_poll("b.queue", vt=1, max_poll_seconds=0)
    with pytest.raises(ConfigError, match="bad queue name"):
        mq.create_queue("no spaces")


def test_drop_queue_waits_out_a_send_in_flight(db_url: str, mq: MessageQueue) -> None:
    """A send committing during drop_queue leaves no message behind in the dropped queue."""
    app = app_connection(db_url)
    mq.send(Q, "in flight", conn=app)  # uncommitted: holds its counter shard
    dropped: list[bool] = []

    def drop() -> None:
        other = MessageQueue(db_url)
        dropped.append(other.drop_queue(Q))
        other.close()

    dropper = threading.Thread(target=drop)
    dropper.start()
    time.sleep(0.3)
    assert dropper.is_alive(), "drop_queue did not wait for the send"
    app.commit()
    app.close()
    dropper.join(timeout=30)
    assert dropped == [True]
    assert raw(mq.backend, "SELECT COUNT(*) FROM batchq_message", {}) == [(0,)]


@pytest.mark.parametrize("bad", [datetime.now(), {1, 2}, math.nan, {"x": math.inf}, object()])
def test_non_json_messages_are_refused_before_writing(mq: MessageQueue, bad: Any) -> None:
    with pytest.raises(PayloadError):
        mq.send(Q, bad)
    with pytest.raises(PayloadError):
        mq.send_batch(Q, ["fine", bad])
    with pytest.raises(PayloadError):
        mq.send(Q, "fine", headers={"at": bad})
    assert mq.metrics(Q).total_messages == 0
    assert mq.metrics(Q).queue_length == 0


def test_a_message_larger_than_the_server_accepts_is_refused(mq: MessageQueue) -> None:
    limit = mq.backend.payload_limit()
    with pytest.raises(PayloadError, match="more than this database accepts"):
        mq.send(Q, "x" * (limit + 1))
    with pytest.raises(PayloadError, match="more than this database accepts"):
        mq.send(Q, '"' * (limit // 2 + 1))  # escaped on the wire: twice as long
    assert mq.metrics(Q).total_messages == 0


def test_bad_arguments(mq: MessageQueue) -> None:
    with pytest.raises(ConfigError, match="qty"):
        mq.read(Q, vt=30, qty=0)
    with pytest.raises(ConfigError, match="duration"):
        mq.read(Q, vt=-1)
    with pytest.raises(ConfigError, match="list"):
        mq.read(Q, vt=30, where={"tags": ["a"]})
    with pytest.raises(ConfigError, match="message id"):
        mq.delete(Q, "1")  # type: ignore[arg-type]


def test_transactional_send_commit_and_rollback(db_url: str, mq: MessageQueue) -> None:
    app = app_connection(db_url)
    kept = mq.send(Q, "kept", conn=app)
    app.commit()
    mq.send(Q, "rolled back", conn=app)
    mq.send_batch(Q, ["also rolled back"] * 3, conn=app)
    app.rollback()
    app.close()
    assert ids(mq.read(Q, vt=30, qty=10)) == [kept]
    assert mq.metrics(Q).total_messages == 1


# -- the JSON filter -----------------------------------------------------------------


def test_read_filter_is_containment(mq: MessageQueue) -> None:
    docs = [
        {"kind": "mail", "to": {"domain": "a.org", "vip": True}, "n": 1},
        {"kind": "sms", "n": 2},
        {"kind": "mail", "to": {"domain": "b.org", "vip": False}, "n": 3},
        {"kind": "mail", "to": None, "n": 4.0},
        ["kind", "mail"],
        "mail",
        {"kind.x": "dotted", "n": 5},
    ]
    sent = mq.send_batch(Q, docs)

    def matching(where: dict[str, Any]) -> list[int]:
        got = mq.read(Q, vt=30, qty=10, where=where)
        for message in got:
            mq.set_vt(Q, message.msg_id, 0)  # give it back for the next filter
        return ids(got)

    assert matching({"kind": "mail"}) == [sent[0], sent[2], sent[3]]
    assert matching({"to": {"vip": True}}) == [sent[0]]
    assert matching({"to": {}}) == [sent[0], sent[2]]  # an object, whatever it holds
    assert matching({"to": None}) == [sent[3]]  # null, not a missing key
    assert matching({"n": 4}) == [sent[3]]  # 4 and 4.0 are the same number
    assert matching({"kind.x": "dotted"}) == [sent[6]]
    assert matching({"kind": "fax"}) == []
    assert matching({}) == [sent[0], sent[1], sent[2], sent[3], sent[6]]  # every object


@pytest.mark.backends("mysql", "postgresql")  # SQLite has no row locks: one writer at a time
def test_read_locks_only_the_rows_it_returns(backend_name: str, db_url: str, mq: MessageQueue) -> None:
    """A reader's open transaction holds exactly its rows: qty and the filter limit the locks."""
    sent = mq.send_batch(Q, [{"kind": "sms"}, {"kind": "mail"}, {"kind": "sms"}, {"kind": "mail"}])
    holder = create_backend(db_url)
    params = {
        "queue": Q,
        "qty": 1,
        "where": json.dumps({"kind": "mail"}),
        "where_paths": json.dumps(["$", '$."kind"']),
        "vt": 0.0,
    }
    try:
        with holder.transaction():
            locked = holder.fetchall("mq_read", params)
            assert [row["msg_id"] for row in locked] == [sent[1]]
            # The holder's transaction is open: every other message is still readable.
            assert ids(mq.read(Q, vt=30, qty=10)) == [sent[0], sent[2], sent[3]]
    finally:
        holder.close()


# -- cancel --------------------------------------------------------------------------


def test_cancel_removes_a_free_message_and_refuses_a_held_one(mq: MessageQueue) -> None:
    free, held, delayed = mq.send_batch(Q, ["free", "held", "delayed"])
    assert mq.cancel(Q, free) is True
    assert mq.cancel(Q, free) is False  # gone

    [message] = mq.read(Q, vt=0.5)
    assert message.msg_id == held
    with pytest.raises(MessageHeld, match="held by a consumer"):
        mq.cancel(Q, held)
    assert mq.get(Q, held) is not None
    wait_for(lambda: mq.get(Q, held).vt <= datetime.now(timezone.utc), timeout=10)  # type: ignore[union-attr]
    assert wait_for(lambda: _cancelled(mq, held), timeout=10)

    mq.set_vt(Q, delayed, 60)  # hidden but never read: nobody holds it
    assert mq.cancel(Q, delayed) is True
    assert mq.metrics(Q).queue_length == 0


def _cancelled(mq: MessageQueue, msg_id: int) -> bool:
    try:
        return mq.cancel(Q, msg_id)
    except MessageHeld:
        return False  # the app clock ran ahead of the server's


# -- helpers -------------------------------------------------------------------------


def _queue(db_url: str) -> Queue:
    return Queue(db_url)
