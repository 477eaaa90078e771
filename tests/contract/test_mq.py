"""The message-queue API (batchq.MessageQueue), on every backend, against real servers."""

from __future__ import annotations

import json
import math
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from batchq import ConfigError, MessageHeld, MessageQueue, PayloadError, Queue, QueueFull, QueueNotFound
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


# -- headers, absolute times -------------------------------------------------------------


def test_send_batch_takes_one_headers_per_message(mq: MessageQueue) -> None:
    sent = mq.send_batch(Q, ["a", "b", "c"], headers=[{"trace": "1"}, None, {"trace": "3", "n": [1]}])
    got = mq.read(Q, vt=30, qty=5)
    assert ids(got) == sent
    assert [m.headers for m in got] == [{"trace": "1"}, None, {"trace": "3", "n": [1]}]
    with pytest.raises(ConfigError, match="one dict"):
        mq.send_batch(Q, ["a", "b"], headers=[{"only": "one"}])
    with pytest.raises(PayloadError, match="JSON object"):
        mq.send_batch(Q, ["a"], headers=[["not", "a", "dict"]])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="headers"):
        mq.send_batch(Q, ["a"], headers="trace")  # type: ignore[arg-type]
    assert mq.metrics(Q).total_messages == 3


def test_send_and_set_vt_take_an_absolute_time(mq: MessageQueue) -> None:
    server_now = mq.metrics(Q).scrape_time  # the server's clock, which the times are on
    later = server_now + timedelta(minutes=10)
    msg_id = mq.send(Q, "at ten past", delay=later)
    message = mq.get(Q, msg_id)
    assert message is not None and abs((message.vt - later).total_seconds()) < 0.01
    assert mq.read(Q, vt=30) == []

    past = mq.send(Q, "in the past: now", delay=server_now - timedelta(days=3))
    assert ids(mq.read(Q, vt=30)) == [past]

    in_paris = later.astimezone(timezone(timedelta(hours=1)))  # any zone: the same instant
    moved = mq.set_vt(Q, past, in_paris + timedelta(minutes=5))
    assert moved is not None and abs((moved.vt - later - timedelta(minutes=5)).total_seconds()) < 0.01
    back = mq.set_vt(Q, msg_id, server_now - timedelta(hours=1))  # past: visible now
    assert back is not None and ids(mq.read(Q, vt=30)) == [msg_id]

    naive = datetime(2030, 1, 1)
    with pytest.raises(ConfigError, match="naive"):
        mq.send(Q, "x", delay=naive)
    with pytest.raises(ConfigError, match="naive"):
        mq.set_vt(Q, msg_id, naive)
    assert mq.metrics(Q).total_messages == 2


# -- every operation in the caller's transaction -----------------------------------------


def test_every_operation_joins_the_callers_transaction(db_url: str, mq: MessageQueue) -> None:
    """Each operation on conn= is undone by the caller's rollback, and kept by its commit."""
    kept, read_one, popped, deleted, archived, batch_a, batch_b, held = mq.send_batch(Q, list(range(8)))
    app = app_connection(db_url)
    assert ids(mq.read(Q, vt=60, qty=1, conn=app)) == [kept]
    assert mq.pop(Q, conn=app) is not None
    assert mq.delete(Q, deleted, conn=app) is True
    assert mq.archive(Q, archived, conn=app) is True
    assert mq.delete_batch(Q, [batch_a], conn=app) == [batch_a]
    assert mq.archive_batch(Q, [batch_b], conn=app) == [batch_b]
    assert mq.set_vt(Q, held, 60, conn=app) is not None
    assert mq.create_queue("side", conn=app) is True
    mq.send("side", "x", conn=app)
    assert mq.purge_queue("side", conn=app) == 1
    assert mq.drop_queue("side", conn=app) is True
    app.rollback()

    assert sorted(ids(mq.read(Q, vt=0, qty=10))) == sorted(
        [kept, read_one, popped, deleted, archived, batch_a, batch_b, held]
    )
    assert [m.read_ct for m in mq.read(Q, vt=0, qty=10)] == [2] * 8  # only the two reads above count
    assert [q.queue_name for q in mq.list_queues()] == [Q]
    assert mq.read_archive(Q) == []

    assert mq.create_queue("side", conn=app) is True
    assert mq.delete(Q, deleted, conn=app) is True
    assert mq.archive(Q, archived, conn=app) is True
    app.commit()
    app.close()
    assert [q.queue_name for q in mq.list_queues()] == [Q, "side"]
    assert mq.get(Q, deleted) is None
    assert ids(mq.read_archive(Q)) == [archived]


def test_a_read_in_the_callers_transaction_is_undone_by_its_rollback(db_url: str, mq: MessageQueue) -> None:
    msg_id = mq.send(Q, {"n": 1})
    app = app_connection(db_url)
    [message] = mq.read(Q, vt=60, conn=app)
    assert message.read_ct == 1
    app.rollback()
    app.close()
    again = mq.read(Q, vt=60)  # visible at once: the hold was never committed
    assert ids(again) == [msg_id] and again[0].read_ct == 1


# -- bounded queues --------------------------------------------------------------------


def test_a_full_drop_oldest_queue_archives_its_oldest_waiting_messages(mq: MessageQueue) -> None:
    ring = "ring"
    assert mq.create_queue(ring, max_length=3) is True
    first = mq.send_batch(ring, [0, 1, 2])
    [held] = mq.read(ring, vt=60)  # a consumer holds the oldest: it goes last
    assert held.msg_id == first[0]
    newer = mq.send_batch(ring, [3, 4])
    assert mq.metrics(ring).queue_length == 3
    remaining = mq.read(ring, vt=0, qty=10)
    assert ids(remaining) == newer  # the held one is still held, so not read here
    assert mq.get(ring, first[0]) is not None
    dropped = mq.read_archive(ring, reason="overflow")
    assert ids(dropped) == first[1:]
    assert [m.message for m in dropped] == [1, 2] and all(m.reason == "overflow" for m in dropped)

    mq.send_batch(ring, [5, 6, 7])  # nothing waiting is left to drop first: held ones go too
    assert mq.metrics(ring).queue_length == 3
    assert mq.get(ring, first[0]) is None
    assert mq.delete(ring, held.msg_id, read_ct=held.read_ct) is False  # its consumer finds it gone
    assert len(mq.read_archive(ring, reason="overflow")) == 5
    assert mq.metrics(ring).total_messages == 8

    with pytest.raises(QueueFull, match="at most 3 at a time"):
        mq.send_batch(ring, [8, 9, 10, 11])
    assert mq.metrics(ring).total_messages == 8


def test_a_full_reject_queue_raises_and_writes_nothing(db_url: str, mq: MessageQueue) -> None:
    strict = "strict"
    mq.create_queue(strict, max_length=2, overflow="reject")
    mq.send_batch(strict, ["a", "b"])
    with pytest.raises(QueueFull, match="is full .*overflow='reject'"):
        mq.send(strict, "c")
    app = app_connection(db_url)
    with pytest.raises(QueueFull):
        mq.send(strict, "c", conn=app)
    mq.send(Q, "the caller's transaction goes on", conn=app)
    app.commit()
    app.close()
    metrics = mq.metrics(strict)
    assert (metrics.queue_length, metrics.total_messages) == (2, 2)
    assert mq.read_archive(strict) == []
    assert mq.metrics(Q).queue_length == 1

    [taken] = mq.read(strict, vt=60)  # a held message still counts: it comes back unless deleted
    with pytest.raises(QueueFull):
        mq.send(strict, "c")
    mq.delete(strict, taken.msg_id)
    mq.send(strict, "c")
    assert mq.metrics(strict).queue_length == 2


@pytest.mark.backends("mysql", "postgresql")  # SQLite has one writer: nothing to deadlock
def test_bounded_sends_in_open_transactions_wait_rather_than_deadlock(db_url: str, mq: MessageQueue) -> None:
    """Two applications' transactions each send several times to one bounded queue: the second
    waits for the first's commit (the queue's turn), and neither deadlocks."""
    mq.create_queue("ring", max_length=100)
    first, second = app_connection(db_url), app_connection(db_url)
    mq.send("ring", "a1", conn=first)  # holds the queue's turn until it commits
    done: list[int] = []

    def other() -> None:
        other_mq = MessageQueue(db_url)
        done.extend(other_mq.send("ring", f"b{n}", conn=second) for n in range(5))
        second.commit()
        other_mq.close()

    thread = threading.Thread(target=other)
    thread.start()
    time.sleep(0.3)
    assert thread.is_alive() and done == [], "the second transaction did not wait for the first"
    for n in range(2, 6):
        mq.send("ring", f"a{n}", conn=first)  # would deadlock if it locked the other's shard
    first.commit()
    thread.join(timeout=30)
    assert len(done) == 5
    first.close()
    second.close()
    assert mq.metrics("ring").total_messages == 10


def test_configure_queue_changes_the_bound(mq: MessageQueue) -> None:
    mq.send_batch(Q, list(range(5)))
    assert mq.configure_queue(Q, max_length=2) == 3  # drop_oldest: fits the new bound at once
    assert [m.message for m in mq.read(Q, vt=0, qty=10)] == [3, 4]
    assert [m.message for m in mq.read_archive(Q, reason="overflow")] == [0, 1, 2]
    [info] = mq.list_queues()
    assert (info.max_length, info.overflow, info.durable) == (2, "drop_oldest", True)

    assert mq.configure_queue(Q, max_length=1, overflow="reject") == 0  # reject keeps them
    assert mq.metrics(Q).queue_length == 2
    with pytest.raises(QueueFull):
        mq.send(Q, "no room")
    assert mq.configure_queue(Q, max_length=None) == 0
    mq.send_batch(Q, list(range(10)))
    assert mq.metrics(Q).queue_length == 12
    assert mq.list_queues()[0].max_length is None
    with pytest.raises(QueueNotFound):
        mq.configure_queue("nope", max_length=1)


def test_create_queue_settings_are_checked(mq: MessageQueue) -> None:
    assert mq.create_queue("ring", max_length=5, overflow="reject") is True
    assert mq.create_queue("ring", max_length=5, overflow="reject") is False  # the same: idempotent
    assert mq.create_queue("ring") is False  # no settings asked for: any will do
    with pytest.raises(ConfigError, match="configure_queue"):
        mq.create_queue("ring", max_length=6)
    with pytest.raises(ConfigError, match="configure_queue"):
        mq.create_queue(Q, max_length=6)
    for bad in (
        {"max_length": 0},
        {"max_length": True},
        {"max_length": 2**40},
        {"max_length": "5"},
        {"max_length": 5, "overflow": "block"},
        {"overflow": "reject"},  # a policy without a bound
    ):
        with pytest.raises(ConfigError, match="max_length|overflow"):
            mq.create_queue("bad", **bad)  # type: ignore[arg-type]
    assert [q.queue_name for q in mq.list_queues()] == [Q, "ring"]


def test_a_settings_row_written_by_hand_is_read_safely(mq: MessageQueue) -> None:
    """An unknown overflow policy (plain SQL) drops oldest rather than failing every send."""
    raw(mq.backend, "UPDATE batchq_mq_sent SET max_length = 1, overflow = 'bogus'", {})
    mq.send_batch(Q, ["a"])
    mq.send(Q, "b")
    assert [m.message for m in mq.read(Q, vt=0, qty=5)] == ["b"]
    assert mq.list_queues()[0].overflow == "drop_oldest"


def test_a_queue_registered_by_hand_under_a_refused_name_can_be_cleared(mq: MessageQueue) -> None:
    """A queue written by plain SQL under a name today's rules refuse: metrics, purge_queue and
    drop_queue still work on it (as SQL does); a name no queue has is still refused."""
    mq.create_queue("hand")
    mq.send_batch("hand", ["a", "b"])
    name = "hand made"
    for table in ("batchq_mq_meta", "batchq_mq_sent", "batchq_message"):
        raw(mq.backend, f"UPDATE {table} SET queue = '{name}' WHERE queue = 'hand'", {})
    assert name in [info.queue_name for info in mq.list_queues()]
    assert mq.metrics(name).queue_length == 2
    assert name in [m.queue_name for m in mq.metrics_all()]
    assert mq.purge_queue(name) == 2
    assert mq.drop_queue(name) is True
    assert name not in [info.queue_name for info in mq.list_queues()]
    for call in (mq.purge_queue, mq.drop_queue):
        with pytest.raises(ConfigError, match="bad queue name"):
            call(name)


# -- the archive -----------------------------------------------------------------------


def test_read_archive_filters_and_pages(mq: MessageQueue) -> None:
    sent = mq.send_batch(Q, list(range(7)))
    mq.archive_batch(Q, sent[:5])
    other = "other"
    mq.create_queue(other)
    mq.archive(other, mq.send(other, "elsewhere"))

    first = mq.read_archive(Q, limit=2)
    assert ids(first) == sent[:2] and first[0].message == 0 and first[0].reason is None
    assert ids(mq.read_archive(Q, after_id=first[-1].msg_id, limit=2)) == sent[2:4]
    assert ids(mq.read_archive(Q, after_id=sent[3])) == [sent[4]]
    assert mq.read_archive(Q, after_id=sent[4]) == []
    assert all(m.archived_at >= m.enqueued_at for m in first)

    stamp = first[0].archived_at
    assert ids(mq.read_archive(Q, since=stamp - timedelta(seconds=1))) == sent[:5]
    assert mq.read_archive(Q, until=stamp - timedelta(seconds=1)) == []
    assert mq.read_archive(Q, since=stamp + timedelta(hours=1)) == []
    assert mq.read_archive(Q, reason="overflow") == []
    with pytest.raises(ConfigError, match="naive"):
        mq.read_archive(Q, since=datetime(2030, 1, 1))
    with pytest.raises(ConfigError, match="limit"):
        mq.read_archive(Q, limit=0)
    with pytest.raises(ConfigError, match="after_id"):
        mq.read_archive(Q, after_id=-1)
    with pytest.raises(QueueNotFound):
        mq.read_archive("missing")


def test_prune_archive_deletes_old_rows_in_batches(mq: MessageQueue) -> None:
    sent = mq.send_batch(Q, list(range(7)))
    mq.archive_batch(Q, sent)
    mq.create_queue("other")
    mq.archive("other", mq.send("other", "x"))
    assert mq.prune_archive("1h") == 0  # nothing is that old
    time.sleep(0.3)
    assert mq.prune_archive(0.2, queue=Q, batch=3) == 7  # batches of 3, 3 and 1
    assert mq.read_archive(Q) == []
    assert len(mq.read_archive("other")) == 1
    assert mq.prune_archive(0) == 1
    with pytest.raises(ConfigError, match="batch"):
        mq.prune_archive(0, batch=0)


# -- helpers -------------------------------------------------------------------------


def _queue(db_url: str) -> Queue:
    return Queue(db_url)
