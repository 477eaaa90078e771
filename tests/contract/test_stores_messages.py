"""The message store's contract (batchq.stores.messages), and the operator's views of it
(batchq.stores.message_views): each method called directly, on every dialect.

What batchq.mq builds on them (checks, types, polling, receipts as errors) is tested in
test_mq.py and test_mq_views.py; here the operations alone, so that a dialect's store can be
checked by itself.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from batchq import MessageQueue, PayloadError
from batchq.backends import Row
from batchq.mq.checks import _filter_paths, _filter_text
from batchq.policy.typed import schema_hash
from batchq.stores.message_views import MessageViewStore
from batchq.stores.messages import MessageStore, MySQLMessageStore, PostgreSQLMessageStore, SendSettings

S = "store_q"  # the queue these tests create through the store (the mq fixture has made "mail")
UNTYPED = schema_hash(None)


def store(mq: MessageQueue) -> MessageStore:
    return mq.backend.stores.messages


def created(mq: MessageQueue, queue: str = S, **settings: Any) -> MessageStore:
    """``queue`` registered with its counter, as create_queue does."""
    messages = store(mq)
    bound = {"max_length": None, "overflow": None, "durable": True, **settings}
    with mq.backend.transaction():
        assert messages.create(queue)
        messages.create_counter(queue, **bound, shards=4)
    return messages


def sent(
    messages: MessageStore, bodies: list[Any], queue: str = S, delay: float = 0.0, **more: Any
) -> list[int]:
    rows = [
        {"queue": queue, "message": json.dumps(body), "headers": None, "delay": delay, "at": None, **more}
        for body in bodies
    ]
    return messages.insert(rows, durable=True)


def bodies(rows: list[Row]) -> list[Any]:
    return [json.loads(row["message"]) for row in sorted(rows, key=lambda row: int(row["msg_id"]))]


def test_each_dialect_gets_its_variant(mq: MessageQueue) -> None:
    expected = {"mysql": MySQLMessageStore, "postgresql": PostgreSQLMessageStore, "sqlite": MessageStore}
    assert type(store(mq)) is expected[mq.backend.dialect]
    assert store(mq) is store(mq)  # made once per connection
    assert store(mq).unlogged_queues is (mq.backend.dialect == "postgresql")
    assert type(mq.backend.stores.message_views) is MessageViewStore


# -- a queue ----------------------------------------------------------------------------------


def test_create_registers_once_and_queue_reads_its_settings(mq: MessageQueue) -> None:
    messages = created(mq, max_length=5, overflow="reject")
    assert messages.create(S) is False
    assert messages.exists(S) and not messages.exists("nothing_here")
    assert messages.queue("nothing_here") is None
    row = messages.queue(S)
    assert row is not None
    assert (row["queue_name"], row["max_length"], row["overflow"], bool(row["durable"])) == (
        S,
        5,
        "reject",
        True,
    )
    assert [row["queue_name"] for row in messages.queues()] == ["mail", S]


def test_configure_sets_the_bound_on_an_existing_queue_only(mq: MessageQueue) -> None:
    messages = created(mq)
    assert messages.configure("nothing_here", 3, "reject") is False
    assert messages.configure(S, 3, "drop_oldest") is True
    settings = messages.send_settings(S, 2)
    assert settings is not None and settings.bound is not None
    assert (settings.bound.max_length, settings.bound.overflow) == (3, "drop_oldest")
    assert messages.configure(S, None, None) is True
    assert messages.send_settings(S, 2) == SendSettings(bound=None, durable=True)


def test_lock_and_length(mq: MessageQueue) -> None:
    messages = created(mq)
    with mq.backend.transaction():
        assert messages.lock(S) is True
        assert messages.lock("nothing_here") is False
        assert messages.length(S) == 0
    sent(messages, [1, 2, 3])
    assert messages.length(S) == 3
    assert messages.length("nothing_here") == 0


def test_schema_and_the_counters_type(mq: MessageQueue) -> None:
    messages = created(mq)
    row = messages.schema(S)
    assert row is not None and row["payload_schema"] is None
    assert messages.schema("nothing_here") is None
    text = json.dumps({"type": "object"})
    assert messages.set_counter_schema(S, schema_hash(text)) is True
    assert messages.set_counter_schema("nothing_here", schema_hash(text)) is False
    messages.set_schema(S, text)
    row = messages.schema(S)
    assert row is not None and row["payload_schema"] == text
    # The counter now counts only sends checked against the new type.
    assert messages.count_sent(S, 0, 1, UNTYPED) is False
    assert messages.count_sent(S, 0, 1, schema_hash(text)) is True


def test_messages_page_reads_the_queue_by_id_past_a_point(mq: MessageQueue) -> None:
    messages = created(mq)
    sent(messages, [{"n": 1}, "text", {"n": 2}, 7])
    first = messages.messages_page(S, 0, 3)
    assert [json.loads(row["message"]) for row in first] == [{"n": 1}, "text", {"n": 2}]
    rest = messages.messages_page(S, int(first[-1]["msg_id"]), 3)
    assert [json.loads(row["message"]) for row in rest] == [7]
    assert messages.messages_page(S, int(rest[-1]["msg_id"]), 3) == []


def test_drop_removes_counter_registration_messages_and_archive(mq: MessageQueue) -> None:
    messages = created(mq)
    first, _ = sent(messages, [1, 2])
    with mq.backend.transaction():
        assert messages.archive(S, first)
    with mq.backend.transaction():
        messages.drop_counter(S)
        assert messages.drop_registration(S) is True
        messages.drop_messages(S)
        messages.drop_archive(S)
    assert not messages.exists(S)
    assert messages.send_settings(S, 0) is None
    assert messages.length(S) == 0
    assert messages.archived(S, after_id=0, limit=10) == []
    assert messages.drop_registration(S) is False


def test_purge_deletes_every_message_held_or_not(mq: MessageQueue) -> None:
    messages = created(mq)
    sent(messages, [1, 2, 3])
    messages.read(S, vt=60, qty=1)
    assert messages.purge(S) == 3
    assert messages.purge(S) == 0


def test_metrics_counts_messages_and_sends(mq: MessageQueue) -> None:
    messages = created(mq)
    sent(messages, [1, 2])
    sent(messages, [3], delay=3600)
    assert messages.count_sent(S, 1, 3, UNTYPED)
    row = messages.metrics(S)
    assert (int(row["queue_length"]), int(row["queue_visible_length"]), int(row["total_messages"])) == (
        3,
        2,
        3,
    )
    assert row["scrape_time"] is not None


# -- sending --------------------------------------------------------------------------------


def test_send_settings_lock_a_shard_and_tell_bound_and_durability(mq: MessageQueue) -> None:
    messages = created(mq, max_length=2, overflow="reject")
    assert messages.send_settings("nothing_here", 0) is None
    with mq.backend.transaction():
        settings = messages.send_settings(S, 3)
    assert settings is not None and settings.durable is True
    assert settings.bound is not None and (settings.bound.max_length, settings.bound.overflow) == (
        2,
        "reject",
    )


def test_count_sent_adds_to_a_shard_of_an_existing_queue(mq: MessageQueue) -> None:
    messages = created(mq)
    assert messages.count_sent(S, 0, 2, UNTYPED) is True
    assert messages.count_sent(S, 3, 1, UNTYPED) is True
    assert messages.count_sent("nothing_here", 0, 1, UNTYPED) is False
    assert int(messages.metrics(S)["total_messages"]) == 3


def test_insert_gives_ids_in_order_and_check_send_sizes_passes_small_rows(mq: MessageQueue) -> None:
    messages = created(mq)
    rows = [
        {"queue": S, "message": json.dumps({"n": n}), "headers": None, "delay": 0.0, "at": None}
        for n in range(3)
    ]
    messages.check_send_sizes(rows)  # raises only for what the server would refuse (MySQL)
    ids = messages.insert(rows, durable=True)
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert bodies(messages.read(S, vt=30, qty=10)) == [{"n": 0}, {"n": 1}, {"n": 2}]


def test_drop_oldest_archives_waiting_messages_first(mq: MessageQueue) -> None:
    messages = created(mq)
    ids = sent(messages, [0, 1, 2, 3, 4])
    held = messages.read(S, vt=60, qty=1)  # the oldest is held by a consumer
    assert [int(row["msg_id"]) for row in held] == ids[:1]
    with mq.backend.transaction():
        assert messages.drop_oldest(S, 2, "overflow") == 2
    archived = messages.archived(S, after_id=0, limit=10)
    assert [(int(row["msg_id"]), row["reason"]) for row in archived] == [
        (ids[1], "overflow"),
        (ids[2], "overflow"),
    ]
    assert messages.length(S) == 3
    with mq.backend.transaction():  # more than are waiting: held ones go too
        assert messages.drop_oldest(S, 3, "overflow") == 3
    assert messages.length(S) == 0
    assert messages.drop_oldest(S, 1, "overflow") == 0  # empty


@pytest.mark.backends("mysql")
def test_drop_oldest_without_skip_locked_waits_rather_than_skips(mq: MessageQueue) -> None:
    messages = created(mq)
    ids = sent(messages, [0, 1, 2])
    messages.read(S, vt=60, qty=1)
    mq.backend.skip_locked = False
    with mq.backend.transaction():  # the oldest, held or not
        assert messages.drop_oldest(S, 1, "overflow") == 1
    assert [int(row["msg_id"]) for row in messages.archived(S, after_id=0, limit=10)] == ids[:1]


# -- reading and popping ----------------------------------------------------------------------


def test_read_hides_and_counts_oldest_first(mq: MessageQueue) -> None:
    _read_hides_and_counts_oldest_first(mq)


@pytest.mark.backends("mysql")
def test_read_hides_and_counts_oldest_first_without_skip_locked(mq: MessageQueue) -> None:
    mq.backend.skip_locked = False  # as on a server without SKIP LOCKED: mq_*_no_skip
    _read_hides_and_counts_oldest_first(mq)


def _read_hides_and_counts_oldest_first(mq: MessageQueue) -> None:
    messages = created(mq)
    ids = sent(messages, [{"n": n, "kind": "mail" if n % 2 else "sms"} for n in range(5)])
    first = messages.read(S, vt=60, qty=2)
    assert sorted(int(row["msg_id"]) for row in first) == ids[:2]
    assert [int(row["read_ct"]) for row in first] == [1, 1]
    rest = messages.read(S, vt=60, qty=10)
    assert sorted(int(row["msg_id"]) for row in rest) == ids[2:]
    assert messages.read(S, vt=60, qty=10) == []
    with mq.backend.transaction():
        messages.set_vt(S, ids[3], delay=0, at=None)
        messages.set_vt(S, ids[4], delay=0, at=None)
    where = {"kind": "mail"}
    again = messages.read(
        S, vt=60, qty=10, where=_filter_text(where), where_paths=json.dumps(_filter_paths(where))
    )
    assert [(int(row["msg_id"]), int(row["read_ct"])) for row in again] == [(ids[3], 2)]


def test_read_joins_a_transaction_the_caller_holds(mq: MessageQueue) -> None:
    messages = created(mq)
    ids = sent(messages, [1])
    with mq.backend.transaction():
        rows = messages.read(S, vt=60, qty=1)
    assert [int(row["msg_id"]) for row in rows] == ids
    assert messages.read(S, vt=60, qty=1) == []


def test_grouped_read_gives_each_groups_head_once(mq: MessageQueue) -> None:
    _grouped_read_gives_each_groups_head_once(mq)


@pytest.mark.backends("mysql")
def test_grouped_read_gives_each_groups_head_once_without_skip_locked(mq: MessageQueue) -> None:
    mq.backend.skip_locked = False  # as on a server without SKIP LOCKED: mq_*_no_skip
    _grouped_read_gives_each_groups_head_once(mq)


def _grouped_read_gives_each_groups_head_once(mq: MessageQueue) -> None:
    messages = created(mq)
    a1, b1, a2 = (
        sent(messages, [body], headers=json.dumps({"x-pgmq-group": group}))[0]
        for body, group in (("a1", "a"), ("b1", "b"), ("a2", "a"))
    )
    heads = messages.read(S, vt=60, qty=10, grouped=True)
    assert sorted(int(row["msg_id"]) for row in heads) == [a1, b1]
    assert messages.read(S, vt=60, qty=10, grouped=True) == []  # each group has one in flight
    assert messages.delete(S, a1)
    assert [int(row["msg_id"]) for row in messages.read(S, vt=60, qty=10, grouped=True)] == [a2]


def test_pop_deletes_converts_and_archives_what_cannot_be_read(mq: MessageQueue) -> None:
    _pop_deletes_converts_and_archives_what_cannot_be_read(mq)


@pytest.mark.backends("mysql")
def test_pop_deletes_converts_and_archives_what_cannot_be_read_without_skip_locked(mq: MessageQueue) -> None:
    mq.backend.skip_locked = False  # as on a server without SKIP LOCKED: mq_*_no_skip
    _pop_deletes_converts_and_archives_what_cannot_be_read(mq)


def _pop_deletes_converts_and_archives_what_cannot_be_read(mq: MessageQueue) -> None:
    messages = created(mq)
    ids = sent(messages, [{"n": 0}, {"bad": True}, {"n": 2}])

    def unreadable(row: Row, body: Any) -> str | None:
        return "refused by the test" if body == {"bad": True} else None

    popped = messages.pop(S, 2, convert=lambda row: json.loads(row["message"]), unreadable=unreadable)
    assert sorted(popped, key=json.dumps) == [{"bad": True}, {"n": 0}]
    assert messages.length(S) == 1
    archived = messages.archived(S, after_id=0, limit=10)
    assert [(int(row["msg_id"]), row["reason"]) for row in archived] == [(ids[1], "refused by the test")]
    assert messages.pop(S, 5, convert=lambda row: int(row["msg_id"]), unreadable=lambda row, m: None) == [
        ids[2]
    ]
    assert messages.pop(S, 5, convert=lambda row: row, unreadable=lambda row, m: None) == []


def test_archive_popped_keeps_a_deleted_message_with_the_reason(mq: MessageQueue) -> None:
    messages = created(mq)
    (msg_id,) = sent(messages, [{"n": 1}])
    (row,) = messages.pop(S, 1, convert=lambda row: row, unreadable=lambda row, m: None)
    kept = {key: row[key] for key in ("vt", "read_ct", "enqueued_at", "message", "headers")}
    with mq.backend.transaction():
        messages.archive_popped(S, msg_id, kept, "no match")
    (archived,) = messages.archived(S, after_id=0, limit=10)
    assert (int(archived["msg_id"]), archived["reason"], json.loads(archived["message"])) == (
        msg_id,
        "no match",
        {"n": 1},
    )


# -- a message after reading --------------------------------------------------------------------


def test_message_delete_with_and_without_receipt(mq: MessageQueue) -> None:
    messages = created(mq)
    first, second = sent(messages, [{"n": 1}, {"n": 2}])
    row = messages.message(S, first)
    assert row is not None and (int(row["read_ct"]), json.loads(row["message"])) == (0, {"n": 1})
    assert messages.message(S, 10**9) is None
    assert messages.message("other_queue", first) is None
    messages.read(S, vt=60, qty=2)
    assert messages.delete(S, first, read_ct=2) is False  # read once: another reader's receipt
    assert messages.delete(S, first, read_ct=1) is True
    assert messages.delete(S, first) is False
    assert messages.delete(S, second) is True


def test_archive_moves_a_message_once(mq: MessageQueue) -> None:
    messages = created(mq)
    first, second = sent(messages, [{"n": 1}, {"n": 2}])
    messages.read(S, vt=60, qty=1)
    with mq.backend.transaction():
        assert messages.archive(S, first, read_ct=5) is False  # not its receipt
        assert messages.archive(S, first, read_ct=1) is True
        assert messages.archive(S, first) is False  # gone
        assert messages.archive(S, second) is True
    archived = messages.archived(S, after_id=0, limit=10)
    assert [(int(row["msg_id"]), row["reason"]) for row in archived] == [(first, None), (second, None)]
    assert messages.archived(S, after_id=first, limit=10)[0]["msg_id"] == second
    assert len(messages.archived(S, after_id=0, limit=1)) == 1
    assert messages.archived(S, after_id=0, limit=10, reason="overflow") == []


def test_archive_mismatched_only_while_the_hold_stands(mq: MessageQueue) -> None:
    messages = created(mq)
    (msg_id,) = sent(messages, [{"n": 1}])
    messages.read(S, vt=60, qty=1)
    with mq.backend.transaction():
        messages.archive_mismatched(S, msg_id, 2, "another reader's")  # not ours: left alone
    assert messages.length(S) == 1
    with mq.backend.transaction():
        messages.archive_mismatched(S, msg_id, 1, "does not match")
    assert messages.length(S) == 0
    assert [row["reason"] for row in messages.archived(S, after_id=0, limit=10)] == ["does not match"]


def test_archive_failed_keeps_the_error_and_failed_lists_it(mq: MessageQueue) -> None:
    messages = created(mq)
    first, second = sent(messages, [{"n": 1}, {"n": 2}])
    messages.read(S, vt=60, qty=2)
    with mq.backend.transaction():
        assert messages.archive_failed(S, first, 2, "boom") is False  # not its receipt
        assert messages.archive_failed(S, first, 1, "boom") is True
        assert messages.archive_failed(S, second, 1, "bang") is True
    failed = messages.failed(S, 10)
    assert [(int(row["msg_id"]), row["error"]) for row in failed] == [(second, "bang"), (first, "boom")]
    assert len(messages.failed(S, 1)) == 1


def test_set_vt_hides_until_and_checks_the_receipt(mq: MessageQueue) -> None:
    messages = created(mq)
    (msg_id,) = sent(messages, [{"n": 1}])
    with mq.backend.transaction():
        row = messages.set_vt(S, msg_id, delay=3600, at=None)
    assert row is not None and int(row["msg_id"]) == msg_id
    assert messages.read(S, vt=60, qty=1) == []
    assert messages.set_vt(S, msg_id, delay=0, at=None, read_ct=3) is None
    assert messages.set_vt(S, 10**9, delay=0, at=None) is None
    assert messages.set_vt(S, msg_id, delay=None, at=0.0) is not None  # a past time: now
    assert [int(row["msg_id"]) for row in messages.read(S, vt=60, qty=1)] == [msg_id]


def test_cancel_and_held(mq: MessageQueue) -> None:
    messages = created(mq)
    visible, delayed = sent(messages, [1, 2])
    messages.set_vt(S, delayed, delay=3600, at=None)  # never read: delayed
    messages.read(S, vt=60, qty=1)  # the visible one: held by its reader
    held = messages.held(S, visible)
    assert held is not None and 0 < held <= 60
    assert messages.cancel(S, visible) is False  # a reader holds it
    assert messages.held(S, delayed) == 0.0  # delayed, never read: nobody holds it
    assert messages.cancel(S, delayed) is True
    assert messages.held(S, delayed) is None
    assert messages.cancel(S, delayed) is False


# -- the archive ----------------------------------------------------------------------------


def test_prune_archive_deletes_in_batches(mq: MessageQueue) -> None:
    messages = created(mq)
    created(mq, "other_q")
    ids = sent(messages, list(range(5)))
    (other,) = sent(messages, ["o"], queue="other_q")
    with mq.backend.transaction():
        for msg_id in ids:
            messages.archive(S, msg_id)
        messages.archive("other_q", other)
    assert messages.prune_archive(3600, S, 2) == 0  # nothing that old
    assert messages.prune_archive(-60, S, 2) == 5  # three batches: 2, 2, 1
    assert messages.archived(S, after_id=0, limit=10) == []
    assert len(messages.archived("other_q", after_id=0, limit=10)) == 1
    assert messages.prune_archive(-60, None, 1000) == 1


# -- the operator's views -------------------------------------------------------------------


def test_views_count_messages_archive_and_sends(mq: MessageQueue) -> None:
    messages = created(mq, max_length=10, overflow="reject")
    views = mq.backend.stores.message_views
    ids = sent(messages, [1, 2, 3, 4])
    messages.count_sent(S, 0, 4, UNTYPED)
    messages.read(S, vt=60, qty=2)
    messages.read(S, vt=0, qty=1)
    messages.read(S, vt=0, qty=1)  # read twice: redelivered
    messages.set_vt(S, ids[3], delay=3600, at=None)
    with mq.backend.transaction():
        messages.archive(S, ids[0])
    (queue,) = views.queues(S)
    assert (queue["queue_name"], int(queue["sent"]), queue["max_length"], queue["overflow"]) == (
        S,
        4,
        10,
        "reject",
    )
    assert [row["queue_name"] for row in views.queues()] == ["mail", S]
    assert views.queues("nothing_here") == []
    (counts,) = views.message_counts(S)
    figures = {
        key: int(counts[key])
        for key in ("length", "n_visible", "n_delayed", "n_held", "redelivered", "max_id")
    }
    # ids[1] held, ids[2] read twice (visible again), ids[3] delayed and never read
    assert figures == {
        "length": 3,
        "n_visible": 1,
        "n_delayed": 1,
        "n_held": 1,
        "redelivered": 1,
        "max_id": ids[3],
    }
    assert counts["oldest_age_seconds"] is not None
    assert [(row["queue"], int(row["archived"])) for row in views.archive_counts()] == [(S, 1)]
    assert views.archive_counts("mail") == []


def test_views_page_message_and_purge_up_to(mq: MessageQueue) -> None:
    messages = created(mq)
    views = mq.backend.stores.message_views
    ids = sent(messages, [{"n": n} for n in range(5)])
    messages.read(S, vt=60, qty=1)
    page = views.page(S, 0, 2)
    assert [int(row["msg_id"]) for row in page] == ids[:2]
    assert float(page[0]["vt_in_seconds"]) > 0 >= float(page[1]["vt_in_seconds"])
    assert int(page[0]["read_ct"]) == 1  # a view reads nothing: no count, no hold
    assert [int(row["msg_id"]) for row in views.page(S, ids[1], 10)] == ids[2:]
    row = views.message(S, ids[2])
    assert row is not None and json.loads(row["message"]) == {"n": 2} and int(row["read_ct"]) == 0
    assert views.message(S, 10**9) is None
    assert views.purge_up_to(S, ids[2]) == 3
    assert [int(row["msg_id"]) for row in views.page(S, 0, 10)] == ids[3:]


@pytest.mark.backends("mysql")  # the others bind values apart from the statement
def test_a_send_too_large_for_mysql_is_refused_before_anything_is_written(mq: MessageQueue) -> None:
    messages = created(mq)
    with mq.backend.errors():
        cur = mq.backend.conn.cursor()
        cur.execute("SELECT @@max_allowed_packet")
        (packet,) = cur.fetchone()
        cur.close()
    big = {"queue": S, "message": json.dumps("x" * int(packet)), "headers": None, "delay": 0.0, "at": None}
    with pytest.raises(PayloadError):
        messages.check_send_sizes([big])
    assert messages.length(S) == 0


@pytest.mark.backends("postgresql")  # the only dialect with UNLOGGED tables
def test_a_non_durable_queues_messages_go_to_the_unlogged_table(mq: MessageQueue) -> None:
    messages = created(mq, durable=False)
    settings = messages.send_settings(S, 0)
    assert settings is not None and settings.durable is False
    rows = [
        {"queue": S, "message": json.dumps({"n": n}), "headers": None, "delay": 0.0, "at": None}
        for n in range(2)
    ]
    with mq.backend.transaction():  # batchq's own: its commit need not wait for the WAL flush
        ids = messages.insert(rows, durable=False)
    assert ids == sorted(ids)
    with mq.backend.errors():
        cur = mq.backend.conn.cursor()
        cur.execute("SELECT id FROM ONLY batchq_message_unlogged WHERE queue = %s ORDER BY id", (S,))
        assert [row[0] for row in cur.fetchall()] == ids
        cur.close()
    assert bodies(messages.read(S, vt=60, qty=10)) == [{"n": 0}, {"n": 1}]
