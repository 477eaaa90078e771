"""Topics with subscribers (fan-out) on the message queue: MessageQueue.subscribe, publish...

``subscribe("orders", "billing")`` gives the subscriber a message queue of its own, named
``orders:billing``; ``publish("orders", msg)`` puts one copy of the message into the queue of
every subscription of the topic at that moment, in one INSERT ... SELECT inside the publisher's
transaction: a rollback delivers nothing, a commit delivers to all. From then on each copy is
an ordinary message of its queue (read, delete, archive, metrics), so subscribers never hold
each other back.

A topic's shard rows (batchq_mq_topic) order publishes against subscribe and unsubscribe: a
publish locks one shard (picked at random, so concurrent publishers rarely meet) and the
others lock every shard. So a subscription sees exactly the publishes that commit after it,
and an unsubscribe never leaves a copy behind in a queue it dropped.

The handlers `batchq consume` calls are batchq.mq.pubsub's, above this package.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..backends import Row, stored_count, stored_seconds, stored_text
from ..backends.appconn import takes_app_conn
from ..core.config import Duration, parse_duration
from ..errors import ConfigError, PayloadError
from .checks import _check_sizes, _json_text
from .core import SENT_SHARDS
from .records import Message, _json_value, _utc, _utc_or_text

if TYPE_CHECKING:
    from . import MessageQueue

AT_LEAST_ONCE = "at_least_once"
AT_MOST_ONCE = "at_most_once"
POLICIES = (AT_LEAST_ONCE, AT_MOST_ONCE)
DEFAULT_POLICY = AT_LEAST_ONCE  # nothing is lost unless a subscription asks for it
DEFAULT_MAX_TRIES = 5
DEFAULT_VT_SECONDS = 30.0
MAX_TRIES_RANGE = (1, 65535)
TOPIC_SHARDS = SENT_SHARDS
# A topic or subscriber name: a queue name without ':', which joins the two into the queue's name.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")


@dataclass(frozen=True)
class Subscription:
    topic: str
    subscriber: str
    queue: str  # the subscriber's message queue: read it like any other
    policy: str  # at_least_once or at_most_once
    max_tries: int  # at_least_once: calls of the handler before a message is archived
    vt: float  # at_least_once: seconds a read hides a message from other consumers
    created_at: datetime


@dataclass(frozen=True)
class Failure:
    """A message `batchq consume` gave up on: archived with its handler's last error."""

    msg_id: int
    read_ct: int
    enqueued_at: datetime
    archived_at: datetime
    message: Any
    headers: dict[str, Any] | None
    error: str


# -- names and settings -----------------------------------------------------------------


def check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(
            f"bad {what} name {name!r}: use 1-63 letters, digits, '_', '-', '.', starting with a "
            "letter or digit (no ':')"
        )
    return name


def subscription_queue(topic: str, subscriber: str) -> str:
    """The message queue of a subscription: 'topic:subscriber' (at most 64 characters)."""
    queue = f"{check_name(topic, 'topic')}:{check_name(subscriber, 'subscriber')}"
    if len(queue) > 64:
        raise ConfigError(
            f"topic {topic!r} and subscriber {subscriber!r} are too long together: the "
            f"subscription's queue {queue!r} would have {len(queue)} characters, at most 64"
        )
    return queue


def check_policy(policy: str | None) -> str | None:
    if policy is not None and policy not in POLICIES:
        raise ConfigError(f"bad policy {policy!r}: use 'at_least_once' or 'at_most_once'")
    return policy


def check_max_tries(max_tries: int | None) -> int | None:
    low, high = MAX_TRIES_RANGE
    if max_tries is not None and (
        isinstance(max_tries, bool) or not isinstance(max_tries, int) or not low <= max_tries <= high
    ):
        raise ConfigError(f"bad max_tries {max_tries!r}: use a whole number from {low} to {high}")
    return max_tries


def check_vt(vt: Duration | None) -> float | None:
    return None if vt is None else parse_duration(vt, "vt")


# -- subscriptions --------------------------------------------------------------------


def subscribe(
    mq: MessageQueue,
    topic: str,
    subscriber: str,
    *,
    policy: str | None = None,
    max_tries: int | None = None,
    vt: Duration | None = None,
) -> bool:
    """Create a subscription (True), or change the settings given of an existing one (False)."""
    queue = subscription_queue(topic, subscriber)
    wanted = {"policy": check_policy(policy), "max_tries": check_max_tries(max_tries), "vt": check_vt(vt)}
    backend = mq.backend
    topics = backend.stores.topics

    def create_topic() -> None:
        with backend.transaction():
            topics.create_topic(topic, TOPIC_SHARDS)

    def create_or_update() -> bool:
        with backend.transaction():
            topics.lock_topic(topic)  # waits out the publishes in flight
            current = topics.subscription(topic, subscriber)
            if current is not None:
                topics.change(topic, subscriber, **_merged(_subscription(current), wanted))
                return False
            topics.subscribe(topic, subscriber, queue, **_merged(None, wanted))
            if not mq.create_queue(queue):
                raise ConfigError(
                    f"message queue {queue!r} exists already, outside any subscription: drop it "
                    f"(drop_queue({queue!r})) or subscribe under another name"
                )
            return True

    backend.retrying(create_topic)
    return backend.retrying(create_or_update)


def unsubscribe(mq: MessageQueue, topic: str, subscriber: str) -> bool:
    """Remove a subscription with its queue (messages and archive); False when there was none."""
    queue = subscription_queue(topic, subscriber)
    backend = mq.backend
    topics = backend.stores.topics

    def remove() -> bool:
        with backend.transaction():
            topics.lock_topic(topic)  # no publish is half way through
            if not topics.unsubscribe(topic, subscriber):
                return False
            mq._drop(queue, None, subscribed=True)
            return True

    return backend.retrying(remove)


def subscriptions(mq: MessageQueue, topic: str | None = None) -> list[Subscription]:
    """Every subscription (of ``topic``), by topic and subscriber."""
    if topic is not None:
        check_name(topic, "topic")
    found = [_subscription(row) for row in mq.backend.stores.topics.subscriptions()]
    return [sub for sub in found if topic is None or sub.topic == topic]


def _merged(current: Subscription | None, wanted: Mapping[str, Any]) -> dict[str, Any]:
    """The settings to store: those given, else the current ones, else the defaults."""
    defaults = {"policy": DEFAULT_POLICY, "max_tries": DEFAULT_MAX_TRIES, "vt": DEFAULT_VT_SECONDS}
    if current is not None:
        defaults = {"policy": current.policy, "max_tries": current.max_tries, "vt": current.vt}
    return {key: default if wanted[key] is None else wanted[key] for key, default in defaults.items()}


def _subscription(row: Row) -> Subscription:
    """A row as it reads, even one written by hand: an unknown policy reads as the default,
    a max_tries or vt that is no number as theirs."""
    policy = stored_text(row["policy"])
    vt = stored_seconds(row["vt_seconds"])
    return Subscription(
        topic=stored_text(row["topic"]),
        subscriber=stored_text(row["subscriber"]),
        queue=stored_text(row["queue"]),
        policy=policy if policy in POLICIES else DEFAULT_POLICY,
        max_tries=max(stored_count(row["max_tries"]), 1),
        vt=vt if vt is not None and vt >= 0 else DEFAULT_VT_SECONDS,
        created_at=_utc_or_text(row["created_at"]),
    )


# -- publishing -------------------------------------------------------------------------


@takes_app_conn
def publish(
    mq: MessageQueue,
    topic: str,
    msg: Any,
    *,
    delay: Duration | None = None,
    headers: Mapping[str, Any] | None = None,
    conn: Any = None,
) -> int:
    """Deliver a copy of ``msg`` to every subscriber of ``topic``; returns how many copies.

    0 when the topic has no subscriber (nothing is written then). With ``conn=`` the copies
    join that connection's transaction: they exist only if the caller commits.
    """
    check_name(topic, "topic")
    if headers is not None and not isinstance(headers, Mapping):
        raise PayloadError(f"headers must be a JSON object (a dict), not {type(headers).__name__}")
    row = {
        "topic": topic,
        "shard": random.randrange(TOPIC_SHARDS),
        "message": _json_text(msg, "message"),
        "headers": None if headers is None else _json_text(dict(headers), "headers"),
        "delay": parse_duration(delay, "delay"),
    }
    backend = mq.backend
    _check_sizes([row], backend.payload_limit())
    backend.stores.topics.check_publish_size(row, conn)
    if conn is not None:
        return _fan_out(mq, row, conn)

    def own_transaction() -> int:
        with backend.transaction():
            return _fan_out(mq, row)

    return backend.retrying(own_transaction)


def _fan_out(mq: MessageQueue, row: dict[str, Any], conn: Any = None) -> int:
    """Three statements whatever the number of subscribers: lock a shard of the topic (the
    subscriptions cannot change until commit), count, copy."""
    return mq.backend.stores.topics.publish(**row, conn=conn)


# -- giving up on a message -------------------------------------------------------------


def archive_failed(mq: MessageQueue, queue: str, message: Message, error: str) -> bool:
    """Move a message to the archive with ``error``; False when the consumer's hold ran out and
    someone has read it since (its read_ct is the receipt), or it is gone."""
    backend = mq.backend

    def move() -> bool:
        with backend.transaction():
            return backend.stores.messages.archive_failed(queue, message.msg_id, message.read_ct, error)

    return backend.retrying(move)


def failures(mq: MessageQueue, topic: str, subscriber: str, limit: int = 100) -> list[Failure]:
    """The newest messages of a subscription that `batchq consume` archived with an error."""
    queue = subscription_queue(topic, subscriber)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ConfigError(f"bad limit {limit!r}: use a whole number from 1")
    rows = mq.backend.stores.messages.failed(queue, limit)
    return [
        Failure(
            msg_id=int(row["msg_id"]),
            read_ct=stored_count(row["read_ct"]),
            enqueued_at=_utc(row["enqueued_at"]),
            archived_at=_utc(row["archived_at"]),
            message=_json_value(row["message"]),
            headers=_json_value(row["headers"]),
            error=stored_text(row["error"]),
        )
        for row in rows
    ]
