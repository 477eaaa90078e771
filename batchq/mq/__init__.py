"""A message-queue API (after PGMQ and SQS) for consumers that are not `batchq run`.

A message is a JSON document in a named queue. ``read`` hides the messages it
returns for ``vt`` seconds and counts the read; the consumer then ``delete``s or
``archive``s each one, or lets its visibility run out so that another reader gets
it again. Every queue lives in the same few tables (``batchq_message``,
``batchq_message_archive``, ``batchq_mq_meta``, ``batchq_mq_sent``), so no SQL is
ever assembled per queue; every statement is a named query in ``sql/<dialect>/mq.sql``.

A separate class from :class:`batchq.Queue`: jobs name a task and are run by
``batchq run`` with status, retries and sweeps, whereas messages are plain data that
any process reads on its own schedule. They share only the database and the URL.

The package holds one module per concern; MessageQueue is composed of them: ``queues`` (create,
configure, alter, drop, purge, list, metrics), ``sending``, ``reading`` (read, pop),
``after_reading`` (delete, archive, set_vt, cancel, get), ``archive`` (read_archive,
prune_archive); the topics (batchq.mq.topics) are its own few methods. ``core`` is what they share,
``records`` and ``checks`` the conversions of what comes out of the database and what goes in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..appconn import takes_app_conn
from .after_reading import AfterReading
from .archive import Archive
from .core import Seconds
from .queues import QueueLifecycle
from .reading import Reading
from .records import ArchivedMessage, Message, QueueInfo, QueueMetrics
from .sending import Sending
from .topics import Subscription, publish, subscribe, subscriptions, unsubscribe


class MessageQueue(QueueLifecycle, Sending, Reading, AfterReading, Archive):
    """Message queues in the batchq database at ``url`` (default ``$BATCHQ_URL``, then SQLite).

    Each thread gets its own connection, opened on first use. The tables come
    from ``batchq init-db`` (or ``init_db()``); queues from ``create_queue``.

    Every operation that writes takes ``conn=``: what the application holds (a Django
    connection, an SQLAlchemy Connection or Session, a driver's connection: batchq.appconn),
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


__all__ = ["ArchivedMessage", "Message", "MessageQueue", "QueueInfo", "QueueMetrics"]
