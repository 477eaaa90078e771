"""Topics with subscribers (batchq.mq.pubsub) and the consumer's policies, on every backend."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from batchq import ConfigError, MessageQueue, PayloadError, QueueNotFound, TaskError
from batchq.jobs.tasks import Resolver
from batchq.mq.pubsub import failures, load_handlers, subscriber
from batchq.runtime.consumer import ConsumeOptions, Consumer, ConsumeSummary
from tests.support.db import app_connection
from tests.support.processes import APPS_DIR


@pytest.fixture
def calls() -> Iterator[list[tuple[str, Any]]]:
    """The handlers' calls (tests/apps/pubsub_handlers.py), empty at the start of each test."""
    import pubsub_handlers

    pubsub_handlers.calls.clear()
    yield pubsub_handlers.calls
    pubsub_handlers.calls.clear()


def consume(mq: MessageQueue, *topics: str, wait: float = 0.0, **options: Any) -> ConsumeSummary:
    handlers, _ = load_handlers(Resolver(["pubsub_handlers"]), topics)
    return Consumer(mq, handlers, ConsumeOptions(wait=wait, poll_interval=0.05, **options)).run()


def bodies(mq: MessageQueue, queue: str) -> list[Any]:
    return [m.message for m in mq.read(queue, vt=30, qty=100)]


# -- fan-out ------------------------------------------------------------------------------


def test_every_subscriber_gets_a_copy_of_every_message(mq: MessageQueue) -> None:
    assert mq.subscribe("orders", "billing") is True
    assert mq.subscribe("orders", "shipping") is True
    assert mq.subscribe("orders", "billing") is False  # idempotent
    assert [mq.publish("orders", {"n": n}, headers={"h": n}) for n in range(3)] == [2, 2, 2]

    copies = {}
    for queue in ("orders:billing", "orders:shipping"):
        got = copies[queue] = mq.read(queue, vt=30, qty=10)
        assert [m.message for m in got] == [{"n": 0}, {"n": 1}, {"n": 2}]
        assert [m.headers for m in got] == [{"h": 0}, {"h": 1}, {"h": 2}]
        assert mq.metrics(queue).total_messages == 3
    # Each copy is its subscriber's: deleting one leaves the other's.
    assert mq.delete("orders:billing", copies["orders:billing"][0].msg_id)
    assert mq.metrics("orders:shipping").queue_length == 3


def test_a_subscriber_created_later_sees_only_later_messages(mq: MessageQueue) -> None:
    mq.subscribe("orders", "billing")
    mq.publish("orders", {"n": 1})
    mq.subscribe("orders", "late")
    mq.publish("orders", {"n": 2})
    assert bodies(mq, "orders:billing") == [{"n": 1}, {"n": 2}]
    assert bodies(mq, "orders:late") == [{"n": 2}]


def test_publish_joins_the_callers_transaction(db_url: str, mq: MessageQueue) -> None:
    mq.subscribe("orders", "billing")
    mq.subscribe("orders", "shipping")
    conn = app_connection(db_url)
    try:
        assert mq.publish("orders", {"n": "rolled back"}, conn=conn) == 2
        conn.rollback()
        assert mq.metrics("orders:billing").queue_length == 0
        assert mq.metrics("orders:billing").total_messages == 0  # the count rolled back too

        assert mq.publish("orders", {"n": "committed"}, conn=conn) == 2
        assert mq.metrics("orders:shipping").queue_length == 0  # not before the commit
        conn.commit()
    finally:
        conn.close()
    assert bodies(mq, "orders:billing") == bodies(mq, "orders:shipping") == [{"n": "committed"}]


def test_a_topic_nobody_subscribes_to_gets_nothing(mq: MessageQueue) -> None:
    assert mq.publish("nobody", {"n": 1}) == 0
    mq.subscribe("orders", "billing")
    assert mq.unsubscribe("orders", "billing") is True
    assert mq.unsubscribe("orders", "billing") is False
    assert mq.publish("orders", {"n": 1}) == 0
    assert [q.queue_name for q in mq.list_queues()] == ["mail"]


def test_unsubscribe_drops_the_queue_and_a_new_subscription_starts_empty(mq: MessageQueue) -> None:
    mq.subscribe("orders", "billing")
    mq.subscribe("orders", "shipping")
    mq.publish("orders", {"n": 1})
    assert mq.unsubscribe("orders", "billing")
    with pytest.raises(QueueNotFound):
        mq.read("orders:billing", vt=30)
    assert mq.publish("orders", {"n": 2}) == 1
    mq.subscribe("orders", "billing")
    mq.publish("orders", {"n": 3})
    assert bodies(mq, "orders:billing") == [{"n": 3}]
    assert bodies(mq, "orders:shipping") == [{"n": 1}, {"n": 2}, {"n": 3}]


def test_delayed_publish(mq: MessageQueue) -> None:
    mq.subscribe("orders", "billing")
    mq.publish("orders", {"n": 1}, delay=0.5)
    assert mq.read("orders:billing", vt=30) == []
    time.sleep(0.7)
    assert bodies(mq, "orders:billing") == [{"n": 1}]


def test_subscription_settings_are_stored_and_changed(mq: MessageQueue) -> None:
    mq.subscribe("orders", "billing")
    [sub] = mq.subscriptions()
    assert (sub.topic, sub.subscriber, sub.queue) == ("orders", "billing", "orders:billing")
    assert (sub.policy, sub.max_tries, sub.vt) == ("at_least_once", 5, 30.0)
    assert mq.subscribe("orders", "billing", policy="at_most_once", vt="2m") is False
    [sub] = mq.subscriptions("orders")
    assert (sub.policy, sub.max_tries, sub.vt) == ("at_most_once", 5, 120.0)  # max_tries kept
    assert mq.subscriptions("other") == []


@pytest.mark.parametrize(
    ("args", "settings", "needle"),
    [
        (("or:ders", "billing"), {}, "bad topic name"),
        (("orders", ""), {}, "bad subscriber name"),
        (("orders", "b" * 60), {}, "too long together"),
        (("orders", "billing"), {"policy": "exactly_once"}, "bad policy"),
        (("orders", "billing"), {"max_tries": 0}, "bad max_tries"),
        (("orders", "billing"), {"max_tries": True}, "bad max_tries"),
        (("orders", "billing"), {"vt": -1}, "vt"),
    ],
)
def test_bad_subscriptions_are_refused_before_anything_is_written(
    mq: MessageQueue, args: tuple[str, str], settings: dict[str, Any], needle: str
) -> None:
    with pytest.raises(ConfigError, match=needle):
        mq.subscribe(*args, **settings)
    assert mq.subscriptions() == []


def test_a_subscription_never_takes_over_a_queue_of_its_name(mq: MessageQueue) -> None:
    mq.create_queue("orders:billing")
    mq.send("orders:billing", "mine")
    with pytest.raises(ConfigError, match="exists already"):
        mq.subscribe("orders", "billing")
    assert mq.subscriptions() == []
    assert bodies(mq, "orders:billing") == ["mine"]


def test_drop_queue_refuses_a_subscriptions_queue_and_names_the_way_out(
    db_url: str, mq: MessageQueue
) -> None:
    mq.subscribe("orders", "billing")
    mq.publish("orders", {"n": 1})
    needle = r"'orders:billing' is the queue of subscriber 'billing' to topic 'orders'.*unsubscribe"
    with pytest.raises(ConfigError, match=needle):
        mq.drop_queue("orders:billing")
    conn = app_connection(db_url)
    try:
        with pytest.raises(ConfigError, match=needle):
            mq.drop_queue("orders:billing", conn=conn)
        conn.commit()  # nothing was written in the caller's transaction: the queue still takes sends
    finally:
        conn.close()
    assert "orders:billing" in [info.queue_name for info in mq.list_queues()]
    assert mq.publish("orders", {"n": 2}) == 1
    mq.send("orders:billing", {"n": "sent"})
    assert bodies(mq, "orders:billing") == [{"n": 1}, {"n": 2}, {"n": "sent"}]
    assert mq.unsubscribe("orders", "billing")  # the way out the error names
    assert "orders:billing" not in [info.queue_name for info in mq.list_queues()]
    assert mq.publish("orders", {"n": 3}) == 0


def test_bad_publishes_are_refused(mq: MessageQueue) -> None:
    mq.subscribe("orders", "billing")
    with pytest.raises(PayloadError):
        mq.publish("orders", {"n": {1, 2}})  # not JSON
    with pytest.raises(PayloadError, match="headers"):
        mq.publish("orders", 1, headers=["x"])  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        mq.publish("orders", 1, conn="not a connection")
    with pytest.raises(ConfigError, match="bad topic"):
        mq.publish("orders:billing", 1)
    assert mq.metrics("orders:billing").queue_length == 0


# -- ordering against subscribe and unsubscribe (servers: a publish holds its shard) ----------


def _admin(db_url: str, action: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, str(APPS_DIR / "pubsub_admin.py"), db_url, action, "orders", "billing"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    return proc


def _result(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out.strip()


@pytest.mark.backends("mysql", "postgresql")
@pytest.mark.parametrize("action", ["subscribe", "unsubscribe"])
def test_subscribe_and_unsubscribe_wait_for_a_publish_in_flight(
    db_url: str, mq: MessageQueue, action: str
) -> None:
    """A publish whose transaction is open holds its shard of the topic: another process's
    subscribe (or unsubscribe) waits for the commit, so the new subscriber misses that message
    (and an unsubscribe drops the copy with the queue, leaving nothing behind)."""
    mq.subscribe("orders", "shipping")
    if action == "unsubscribe":
        mq.subscribe("orders", "billing")
    conn = app_connection(db_url)  # MySQL: REPEATABLE READ, the server's default
    try:
        mq.publish("orders", {"n": 1}, conn=conn)
        proc = _admin(db_url, action)
        time.sleep(1.0)
        assert proc.poll() is None, "it did not wait for the publisher"
        conn.commit()
        assert _result(proc) == "True"
    finally:
        conn.close()
    mq.publish("orders", {"n": 2})
    if action == "subscribe":
        assert bodies(mq, "orders:billing") == [{"n": 2}]
    else:
        assert [q.queue_name for q in mq.list_queues()] == ["mail", "orders:shipping"]
    assert bodies(mq, "orders:shipping") == [{"n": 1}, {"n": 2}]


# -- handlers and policies ------------------------------------------------------------------


def test_consume_subscribes_its_handlers_with_their_settings(mq: MessageQueue, calls: list[Any]) -> None:
    consume(mq)
    subs = {(s.topic, s.subscriber): s for s in mq.subscriptions()}
    assert set(subs) == {("orders", "billing"), ("orders", "shipping"), ("events", "audit")}
    assert subs["orders", "shipping"].policy == "at_most_once"
    assert (subs["events", "audit"].max_tries, subs["events", "audit"].vt) == (3, 2.0)
    # Settings the decorator leaves out are the stored ones: an operator's change stays.
    mq.subscribe("orders", "billing", max_tries=9)
    consume(mq)
    assert {s.subscriber: s.max_tries for s in mq.subscriptions("orders")}["billing"] == 9


def test_two_subscribers_each_handle_every_message(mq: MessageQueue, calls: list[Any]) -> None:
    consume(mq, "orders")  # subscribes
    for n in range(5):
        mq.publish("orders", {"n": n})
    summary = consume(mq, "orders")
    assert (summary.handled, summary.failed) == (10, 0)
    for label in ("billing", "shipping"):
        assert [body["n"] for who, body in calls if who == label] == list(range(5))
    assert mq.metrics("orders:billing").queue_length == mq.metrics("orders:shipping").queue_length == 0


def test_a_failing_subscriber_does_not_hold_back_the_other(mq: MessageQueue, calls: list[Any]) -> None:
    mq.subscribe("orders", "billing", max_tries=2, vt=0.2)
    consume(mq, "orders")
    for n in range(4):
        mq.publish("orders", {"n": n, "fail_billing": True})
    consume(mq, "orders", wait=1.0)
    shipped = [body["n"] for who, body in calls if who == "shipping"]
    billed = [body["n"] for who, body in calls if who == "billing"]
    assert shipped == [0, 1, 2, 3]  # each once, in order
    assert sorted(billed) == [0, 0, 1, 1, 2, 2, 3, 3]  # two tries each


def test_at_least_once_retries_after_vt_then_archives_with_the_error(
    mq: MessageQueue, calls: list[Any]
) -> None:
    mq.subscribe("orders", "billing", max_tries=3, vt=0.3)
    mq.publish("orders", {"n": 7, "fail_billing": True})
    mq.publish("orders", {"n": 8})
    started = time.monotonic()
    summary = consume(mq, "orders", wait=1.5)
    assert [body["n"] for who, body in calls if who == "billing"] == [7, 8, 7, 7]
    assert time.monotonic() - started >= 0.6  # two visibility timeouts between the tries
    assert (summary.handled, summary.failed, summary.archived) == (1, 3, 1)
    assert mq.metrics("orders:billing").queue_length == 0
    [failure] = failures(mq, "orders", "billing")
    assert failure.message == {"n": 7, "fail_billing": True} and failure.read_ct == 3
    assert failure.error.startswith("ValueError: billing refused order 7")
    assert "pubsub_handlers.py" in failure.error  # the frames too


def test_at_least_once_archives_a_message_read_too_often_without_calling(
    mq: MessageQueue, calls: list[Any]
) -> None:
    """A message whose consumers died mid-handler max_tries times is not called again."""
    mq.subscribe("orders", "billing", max_tries=2)
    mq.publish("orders", {"n": 1})
    for _ in range(2):  # two consumers that read it and died
        [held] = mq.read("orders:billing", vt=0)
    summary = consume(mq, "orders")
    assert [who for who, _ in calls if who == "billing"] == []
    assert (summary.skipped, summary.archived) == (1, 1)
    [failure] = failures(mq, "orders", "billing")
    assert failure.msg_id == held.msg_id and "read 2 times without an outcome" in failure.error


def test_at_most_once_drops_a_failed_message_and_logs_it(
    mq: MessageQueue, calls: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    consume(mq, "orders")
    mq.publish("orders", {"n": 1, "fail_shipping": True})
    mq.publish("orders", {"n": 2})
    with caplog.at_level(logging.ERROR, logger="batchq.runtime.consumer"):
        summary = consume(mq, "orders")
    assert [body["n"] for who, body in calls if who == "shipping"] == [1, 2]  # no retry
    assert summary.dropped == 1
    assert "orders/shipping: message" in caplog.text and "RuntimeError: no courier for order 1" in caplog.text
    assert mq.metrics("orders:shipping").queue_length == 0
    assert failures(mq, "orders", "shipping") == []


def test_the_handler_can_take_the_message_itself(mq: MessageQueue, calls: list[Any]) -> None:
    consume(mq, "events")
    mq.publish("events", {"n": 1, "flaky": True}, headers={"trace": "t1"})
    summary = consume(mq, "events", wait=3.0)  # the retry comes after the 2s vt
    assert [body["n"] for who, body in calls if who == "audit"] == [1, 1]
    assert (summary.handled, summary.failed) == (1, 1)


def test_consume_limits(mq: MessageQueue, calls: list[Any]) -> None:
    consume(mq, "orders")
    for n in range(6):
        mq.publish("orders", {"n": n})
    assert consume(mq, "orders", max_messages=5).processed == 5
    started = time.monotonic()
    summary = consume(mq, "orders", wait=None, max_seconds=0.5)
    assert summary.processed == 7
    assert 0.5 <= time.monotonic() - started < 3


def test_handler_registration_is_checked(mq: MessageQueue) -> None:
    with pytest.raises(ConfigError, match="bad topic"):
        subscriber("a:b", "c")
    with pytest.raises(ConfigError, match="bad policy"):
        subscriber("a", "c", policy="sometimes")
    with pytest.raises(TaskError, match="module level"):
        subscriber("a", "c")(lambda body: None)
    import pubsub_handlers

    with pytest.raises(TaskError, match="has a handler already"):
        subscriber("orders", "billing")(pubsub_handlers.ship)
    with pytest.raises(ConfigError, match="no handler modules"):
        load_handlers(Resolver([]))
    with pytest.raises(ConfigError, match="no @batchq.subscriber handler for the topics"):
        load_handlers(Resolver(["pubsub_handlers"]), topics=["nothing"])
    with pytest.raises(ConfigError, match="no @batchq.subscriber handler in jobs"):
        load_handlers(Resolver(["jobs"]))


def test_a_bad_handler_timeout_is_refused_where_it_is_declared() -> None:
    with pytest.raises(ConfigError, match="bad handler timeout '0s'"):
        subscriber("orders", "never", timeout="0s")
