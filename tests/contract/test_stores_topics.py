"""The topic store's contract (batchq.stores.topics): each method called directly, on every dialect.

What batchq.mq.topics and batchq.mq.routing build on it (names, defaults, the subscription's
queue, matching patterns) is tested in test_pubsub.py and test_mq_pgmq_newer.py; here the
operations alone, so that a dialect's store can be checked by itself.
"""

from __future__ import annotations

import json

import pytest

from batchq import MessageQueue, PayloadError
from batchq.stores.messages import MessageStore
from batchq.stores.topics import TopicStore

TOPIC, SHARDS = "orders", 4


def store(mq: MessageQueue) -> TopicStore:
    return mq.backend.stores.topics


def queue_of(mq: MessageQueue, name: str) -> MessageStore:
    """A message queue (registration and counter) made through the message store."""
    messages = mq.backend.stores.messages
    with mq.backend.transaction():
        messages.create(name)
        messages.create_counter(name, max_length=None, overflow=None, durable=True, shards=SHARDS)
    return messages


def subscribed(mq: MessageQueue, subscriber: str, **settings: object) -> MessageStore:
    topics = store(mq)
    queue = f"{TOPIC}:{subscriber}"
    topics.create_topic(TOPIC, SHARDS)
    with mq.backend.transaction():
        topics.lock_topic(TOPIC)
        topics.subscribe(
            TOPIC, subscriber, queue, **{"policy": "at_least_once", "max_tries": 5, "vt": 30.0, **settings}
        )
    return queue_of(mq, queue)


def test_each_dialect_gets_the_store(mq: MessageQueue) -> None:
    assert type(store(mq)) is TopicStore
    assert store(mq) is store(mq)  # made once per connection


def test_subscribe_change_list_and_unsubscribe(mq: MessageQueue) -> None:
    topics = store(mq)
    assert topics.subscription(TOPIC, "billing") is None
    subscribed(mq, "billing", policy="at_most_once", max_tries=3, vt=12.5)
    subscribed(mq, "audit")
    row = topics.subscription(TOPIC, "billing")
    assert row is not None
    assert (row["queue"], row["policy"], int(row["max_tries"]), float(row["vt_seconds"])) == (
        "orders:billing",
        "at_most_once",
        3,
        12.5,
    )
    assert row["created_at"] is not None
    with mq.backend.transaction():
        topics.change(TOPIC, "billing", policy="at_least_once", max_tries=9, vt=1.0)
    row = topics.subscription(TOPIC, "billing")
    assert row is not None and (row["policy"], int(row["max_tries"]), float(row["vt_seconds"])) == (
        "at_least_once",
        9,
        1.0,
    )
    assert [(r["topic"], r["subscriber"]) for r in topics.subscriptions()] == [
        (TOPIC, "audit"),
        (TOPIC, "billing"),
    ]
    assert topics.subscription_of_queue("orders:billing") == (TOPIC, "billing")
    assert topics.subscription_of_queue("mail") is None
    with mq.backend.transaction():
        topics.lock_topic(TOPIC)
        assert topics.unsubscribe(TOPIC, "billing") is True
    assert topics.unsubscribe(TOPIC, "billing") is False
    assert [r["subscriber"] for r in topics.subscriptions()] == ["audit"]


def test_create_topic_is_idempotent(mq: MessageQueue) -> None:
    topics = store(mq)
    topics.create_topic(TOPIC, SHARDS)
    topics.create_topic(TOPIC, SHARDS)
    with mq.backend.transaction():
        topics.lock_topic(TOPIC)  # every shard, once
        topics.lock_topic("never_subscribed")  # no shards: nothing to wait for


def test_publish_copies_to_every_subscription_and_counts(mq: MessageQueue) -> None:
    topics = store(mq)
    with mq.backend.transaction():
        assert topics.publish(TOPIC, 0, json.dumps({"n": 0}), None, 0.0) == 0  # nobody ever subscribed
    messages = subscribed(mq, "billing")
    subscribed(mq, "audit")
    with mq.backend.transaction():
        assert topics.publish(TOPIC, 2, json.dumps({"n": 1}), json.dumps({"trace": "t"}), 0.0) == 2
    with mq.backend.transaction():
        assert topics.publish(TOPIC, 3, json.dumps({"n": 2}), None, 3600.0) == 2  # delayed
    for queue in ("orders:audit", "orders:billing"):
        rows = messages.read(queue, vt=60, qty=10)
        assert [(json.loads(r["message"]), json.loads(r["headers"])) for r in rows] == [
            ({"n": 1}, {"trace": "t"})
        ]
        assert int(messages.metrics(queue)["total_messages"]) == 2
        assert messages.length(queue) == 2


def test_check_publish_size_passes_small_messages(mq: MessageQueue) -> None:
    publish = {"topic": TOPIC, "shard": 0, "message": json.dumps({"n": 1}), "headers": None, "delay": 0.0}
    store(mq).check_publish_size(publish)


@pytest.mark.backends("mysql")  # the others bind values apart from the statement
def test_check_publish_size_refuses_what_mysql_would_not_take(mq: MessageQueue) -> None:
    with mq.backend.errors():
        cur = mq.backend.conn.cursor()
        cur.execute("SELECT @@max_allowed_packet")
        (packet,) = cur.fetchone()
        cur.close()
    publish = {
        "topic": TOPIC,
        "shard": 0,
        "message": json.dumps("x" * int(packet)),
        "headers": None,
        "delay": 0.0,
    }
    with pytest.raises(PayloadError):
        store(mq).check_publish_size(publish)


def test_bind_unbind_list_and_drop_a_queues_bindings(mq: MessageQueue) -> None:
    topics = store(mq)
    queue_of(mq, "logs")
    with mq.backend.transaction():
        assert topics.bind("logs.#", "logs") is True
        assert topics.bind("logs.#", "logs") is False  # bound already
        assert topics.bind("*.error", "logs") is True
        assert topics.bind("#", "mail") is True
    listed = [(row["pattern"], row["queue"]) for row in topics.bindings()]
    assert listed == [("#", "mail"), ("*.error", "logs"), ("logs.#", "logs")]
    assert all(row["created_at"] is not None for row in topics.bindings())
    assert topics.unbind("*.error", "logs") is True
    assert topics.unbind("*.error", "logs") is False
    with mq.backend.transaction():
        topics.unbind_queue("logs")
    assert [(row["pattern"], row["queue"]) for row in topics.bindings()] == [("#", "mail")]
