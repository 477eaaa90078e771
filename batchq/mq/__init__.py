"""A message-queue API (after PGMQ and SQS) for consumers that are not `batchq run`.

A message is a JSON document in a named queue. ``read`` hides the messages it
returns for ``vt`` seconds and counts the read; the consumer then ``delete``s or
``archive``s each one, or lets its visibility run out so that another reader gets
it again. Every queue lives in the same few tables (``batchq_message``,
``batchq_message_archive``, ``batchq_mq_meta``, ``batchq_mq_sent``), so no SQL is
ever assembled per queue; every statement is a named query in ``sql/<dialect>/mq.sql`` (topics:
``pubsub.sql``), run by the connection's stores (``backend.stores.messages`` and ``.topics``:
batchq.stores.messages, batchq.stores.topics), which also hold the dialects' differences.

A separate class from :class:`batchq.Queue`: jobs name a task and are run by
``batchq run`` with status, retries and sweeps, whereas messages are plain data that
any process reads on its own schedule. They share only the database and the URL.

The package holds one module per concern; MessageQueue is composed of them: ``queues`` (create,
configure, alter, drop, purge, list, metrics), ``sending``, ``reading`` (read, pop, read_grouped_head),
``after_reading`` (delete, archive, set_vt, cancel, get), ``archive`` (read_archive,
prune_archive); the topics (batchq.mq.topics) and the routing by pattern (batchq.mq.routing) are
its own few methods. ``core`` is what they share,
``records`` and ``checks`` the conversions of what comes out of the database and what goes in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..backends.appconn import takes_app_conn
from .after_reading import AfterReading
from .archive import Archive
from .core import Seconds, When
from .queues import QueueLifecycle
from .reading import Reading
from .records import ArchivedMessage, Message, QueueInfo, QueueMetrics
from .routing import (
    TopicBinding,
    bind_topic,
    list_topic_bindings,
    send_batch_topic,
    test_routing,
    unbind_topic,
)
from .sending import Sending
from .topics import Subscription, publish, subscribe, subscriptions, unsubscribe


class MessageQueue(QueueLifecycle, Sending, Reading, AfterReading, Archive):
    """Message queues in the batchq database at ``url`` (default ``$BATCHQ_URL``, then SQLite).

    Each thread gets its own connection, opened on first use. The tables come
    from ``batchq init-db`` (or ``init_db()``); queues from ``create_queue``.

    Every operation that writes takes ``conn=``: what the application holds (a Django
    connection, an SQLAlchemy Connection or Session, a driver's connection: batchq.backends.appconn),
    whose transaction it then joins (nothing is committed or rolled back
    by batchq). A consumer can so read a message, write its effects and delete the message
    in one transaction.
    """

    # -- topics and subscribers (batchq.mq.topics) ------------------------------------

    def subscribe(
        self,
        topic: str,
        subscriber: str,
        *,
        policy: str | None = None,
        max_tries: int | None = None,
        vt: Seconds | None = None,
    ) -> bool:
        """Subscribe to ``topic``: the messages published from now on get a copy in the message
        queue 'topic:subscriber'. True when created; False when it existed (the settings given
        are changed). ``policy`` ('at_least_once', the default, or 'at_most_once'), ``max_tries``
        (default 5) and ``vt`` (default 30s) are how `batchq consume` delivers to its handler."""
        return subscribe(self, topic, subscriber, policy=policy, max_tries=max_tries, vt=vt)

    def unsubscribe(self, topic: str, subscriber: str) -> bool:
        """Remove a subscription with its queue, copies and archive; False when there was none."""
        return unsubscribe(self, topic, subscriber)

    @takes_app_conn
    def publish(
        self,
        topic: str,
        msg: Any,
        *,
        delay: Seconds | None = None,
        headers: Mapping[str, Any] | None = None,
        conn: Any = None,
    ) -> int:
        """Deliver a copy to every subscriber of ``topic`` now, in one transaction (``conn=``:
        the caller's); returns how many copies (0: nobody subscribes)."""
        return publish(self, topic, msg, delay=delay, headers=headers, conn=conn)

    def subscriptions(self, topic: str | None = None) -> list[Subscription]:
        """Every subscription (of ``topic``), by topic and subscriber."""
        return subscriptions(self, topic)

    # -- topic routing by pattern (batchq.mq.routing) -----------------------------------

    def bind_topic(self, pattern: str, queue: str) -> bool:
        """Route the keys that match ``pattern`` ('*': one word, '#': any run, as PGMQ) to the
        existing ``queue``; True when new, False when it was bound already."""
        return bind_topic(self, pattern, queue)

    def unbind_topic(self, pattern: str, queue: str) -> bool:
        """Remove a binding; False when there was none."""
        return unbind_topic(self, pattern, queue)

    def list_topic_bindings(self, queue: str | None = None) -> list[TopicBinding]:
        """Every binding (to ``queue``), by pattern then queue."""
        return list_topic_bindings(self, queue)

    def test_routing(self, routing_key: str) -> list[TopicBinding]:
        """The bindings a message sent with ``routing_key`` would follow (nothing is sent)."""
        return test_routing(self, routing_key)

    @takes_app_conn
    def send_topic(
        self,
        routing_key: str,
        msg: Any,
        *,
        delay: When | None = None,
        headers: Mapping[str, Any] | None = None,
        conn: Any = None,
    ) -> int:
        """Send ``msg`` to every queue bound to a pattern that matches ``routing_key`` (one copy
        per queue), in one transaction; returns how many queues (0: none matched)."""
        heads = None if headers is None else [headers]
        return len(send_batch_topic(self, routing_key, [msg], delay=delay, headers=heads, conn=conn))

    @takes_app_conn
    def send_batch_topic(
        self,
        routing_key: str,
        msgs: Iterable[Any],
        *,
        delay: When | None = None,
        headers: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None = None,
        conn: Any = None,
    ) -> list[tuple[str, int]]:
        """``send_topic`` for several messages: (queue, msg_id) of each copy, by queue then id."""
        return send_batch_topic(self, routing_key, msgs, delay=delay, headers=headers, conn=conn)


__all__ = ["ArchivedMessage", "Message", "MessageQueue", "QueueInfo", "QueueMetrics", "TopicBinding"]
