"""A message queue's lifecycle and settings: create, configure (its bound), alter (its type),
drop, purge, list and metrics."""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from ..backends import Row, stored_count, stored_seconds
from ..backends.appconn import takes_app_conn
from ..core.config import check_queue_name
from ..errors import BatchqError, ConfigError, QueueNotFound
from ..policy.bounds import check_bound
from ..policy.typed import QueueType, SchemaSpec, count_mismatched, schema_hash, schema_text
from .core import SENT_SHARDS, MessageQueueCore, _missing
from .records import QueueInfo, QueueMetrics, _queue_info, _utc

log = logging.getLogger("batchq.mq")


class QueueLifecycle(MessageQueueCore):
    @takes_app_conn
    def create_queue(
        self,
        queue: str,
        *,
        max_length: int | None = None,
        overflow: str | None = None,
        durable: bool = True,
        schema: SchemaSpec | None = None,
        conn: Any = None,
    ) -> bool:
        """Register a queue; False when it existed already (idempotent).

        ``max_length``: at most that many messages in the queue (held or not); a send to a
        full queue archives the oldest messages (``overflow="drop_oldest"``, the default) or
        raises QueueFull (``"reject"``). ``durable=False`` (PostgreSQL only): an UNLOGGED
        table, faster, emptied by a server crash. A queue that exists with other settings
        than the ones given raises ConfigError (configure_queue changes a bound).

        ``schema`` declares the type of its messages (batchq.policy.typed): a JSON Schema (a dict), or a
        dataclass or TypedDict one is derived from. An existing queue with another type is left
        alone and raises ConfigError: change a type with alter_queue.
        """
        settings = _settings(check_queue_name(queue), max_length, overflow, durable)
        store = self.backend.stores.messages
        if not durable and not store.unlogged_queues:
            raise ConfigError(
                f"durable=False needs PostgreSQL (UNLOGGED tables); {self.backend.dialect} has no "
                "table that is transactional yet skips the log: create the queue durable"
            )
        text = schema_text(schema)
        explicit = max_length is not None or overflow is not None or not durable

        def create(conn: Any) -> bool:
            if not store.create(queue, conn):
                if explicit:
                    _check_same_settings(queue, settings, store.queue(queue, conn))
                if text is not None:
                    self._check_same_type(queue, text, conn)
                return False
            bound = {key: settings[key] for key in ("max_length", "overflow", "durable")}
            store.create_counter(queue, **bound, shards=SENT_SHARDS, conn=conn)
            if text is not None:
                self._set_type(queue, text, conn)
            return True

        return self._on(conn, create)

    @takes_app_conn
    def configure_queue(
        self, queue: str, *, max_length: int | None, overflow: str | None = None, conn: Any = None
    ) -> int:
        """Set (or with ``max_length=None`` lift) a queue's bound; returns how many messages a
        drop_oldest queue archived at once to fit a lower bound (a reject queue keeps them and
        refuses sends until it is under its bound). Sends in flight finish first."""
        settings = _settings(check_queue_name(queue), max_length, overflow, True)
        store = self.backend.stores.messages

        def configure(conn: Any) -> int:
            if not store.configure(queue, max_length, settings["overflow"], conn):
                raise _missing(queue)
            if max_length is None or settings["overflow"] == "reject":
                return 0
            store.lock(queue, conn)
            return self._drop_oldest(queue, store.length(queue, conn) - max_length, conn)

        return self._on(conn, configure)

    def alter_queue(self, queue: str, *, schema: SchemaSpec | None, force: bool = False) -> int:
        """Change the type of a queue's messages (None: untyped); returns how many of the messages
        in the queue do not match it (0 unless forced).

        Refused (ConfigError, nothing changed) while a message in the queue, held or not, does not
        match the new type, unless ``force``: such messages are then archived with the reason when
        read. Sends in flight are waited out, and every later send, in any process, is checked
        against the new type (it rides on the send's counter update: batchq.policy.typed).
        """
        check_queue_name(queue)
        if not isinstance(force, bool):
            raise ConfigError(f"bad force {force!r}: use True or False")
        text = schema_text(schema)
        backend = self.backend
        store = backend.stores.messages

        def alter() -> int:
            with backend.transaction():
                if not store.set_counter_schema(queue, schema_hash(text)):
                    raise _missing(queue)
                mismatched = self._mismatched(queue, QueueType(text), force)
                store.set_schema(queue, text)
                return mismatched

        mismatched = backend.retrying(alter)
        self._types.learn(queue, text)
        return mismatched

    def queue_schema(self, queue: str) -> dict[str, Any] | None:
        """The JSON Schema of a queue's messages, as stored; None when it is untyped."""
        return self._read_type(self._existing(queue)).schema

    def _set_type(self, queue: str, text: str | None, conn: Any = None) -> None:
        store = self.backend.stores.messages
        store.set_counter_schema(queue, schema_hash(text), conn)
        store.set_schema(queue, text, conn)

    def _check_same_type(self, queue: str, text: str, conn: Any = None) -> None:
        row = self.backend.stores.messages.schema(queue, conn)
        stored = None if row is None else row["payload_schema"]
        if stored != text:
            raise ConfigError(
                f"message queue {queue!r} exists with {'no type' if stored is None else 'another type'}: "
                f"change it with alter_queue({queue!r}, schema=...)"
            )

    def _mismatched(self, queue: str, new: QueueType, force: bool) -> int:
        """How many messages of the queue do not match a new type; without force, the first one
        raises ConfigError."""
        if new.text is None:
            return 0
        return count_mismatched(
            partial(self.backend.stores.messages.messages_page, queue),
            "msg_id",
            lambda row: new.reason(row["message"]),
            lambda row, reason: (
                f"message {row['msg_id']} of queue {queue!r} does not match the new type "
                f"({reason.split(': ', 1)[1]}): type not changed; wait until such messages are "
                "consumed, or pass force=True (they are then archived with the reason when read)"
            ),
            force,
        )

    @takes_app_conn
    def drop_queue(self, queue: str, *, conn: Any = None) -> bool:
        """Delete a queue with its messages, archive and counter; False when there was none.
        A subscription's queue is refused (ConfigError, nothing dropped): unsubscribe drops it,
        else publishes would go on counting copies into a queue that is gone."""
        try:
            check_queue_name(queue)
        except ConfigError:  # a name registered by plain SQL: dropped too, when it exists
            self._existing(queue, conn)
        return self._on(conn, lambda conn: self._drop(queue, conn, subscribed=False))

    def _drop(self, queue: str, conn: Any, *, subscribed: bool) -> bool:
        """drop_queue's statements; ``subscribed``: unsubscribe's, which removed the subscription."""
        store, topics = self.backend.stores.messages, self.backend.stores.topics
        if not subscribed:  # before anything is written (with conn=, the caller's transaction)
            _refuse_subscribed(queue, topics.subscription_of_queue(queue, conn))
        # The counter first: its row locks wait out sends in flight and make later sends fail,
        # so no message lands after the messages are deleted.
        store.drop_counter(queue, conn)
        if not subscribed:  # and again: a subscribe that created this queue meanwhile committed
            _refuse_subscribed(queue, topics.subscription_of_queue(queue, conn))
        existed = store.drop_registration(queue, conn)
        topics.unbind_queue(queue, conn)  # after the row a bind_topic locks
        store.drop_messages(queue, conn)
        store.drop_archive(queue, conn)
        return existed

    @takes_app_conn
    def purge_queue(self, queue: str, *, conn: Any = None) -> int:
        """Delete every message of a queue, held or not; returns how many."""

        def purge(conn: Any) -> int:
            self._existing(queue, conn)
            return self.backend.stores.messages.purge(queue, conn)

        return self._on(conn, purge, transaction=False)

    def list_queues(self) -> list[QueueInfo]:
        return [_queue_info(row) for row in self.backend.stores.messages.queues()]

    def metrics(self, queue: str) -> QueueMetrics:
        row = self.backend.stores.messages.metrics(self._existing(queue))
        return QueueMetrics(
            queue_name=queue,
            queue_length=stored_count(row["queue_length"]),
            queue_visible_length=stored_count(row["queue_visible_length"]),
            newest_msg_age_sec=stored_seconds(row["newest_msg_age_sec"]),
            oldest_msg_age_sec=stored_seconds(row["oldest_msg_age_sec"]),
            total_messages=stored_count(row["total_messages"]),  # SQLite: a count written by hand
            scrape_time=_utc(row["scrape_time"]),
        )

    def metrics_all(self) -> list[QueueMetrics]:
        """metrics() of every queue, by name (a queue dropped meanwhile is left out)."""
        found = []
        for info in self.list_queues():
            try:
                found.append(self.metrics(info.queue_name))
            except QueueNotFound:
                continue
            except BatchqError as exc:  # a row written by hand (a bad name, a count too large)
                log.warning("message queue %r: no metrics: %s", info.queue_name, exc)
        return found


def _settings(queue: str, max_length: int | None, overflow: str | None, durable: bool) -> dict[str, Any]:
    """A queue's send settings as stored, checked before anything is written."""
    policy = check_bound(max_length, overflow)
    if not isinstance(durable, bool):
        raise ConfigError(f"bad durable {durable!r}: use True or False")
    return {"queue": queue, "max_length": max_length, "overflow": policy, "durable": durable}


def _refuse_subscribed(queue: str, subscription: tuple[Any, Any] | None) -> None:
    if subscription is not None:
        topic, subscriber = subscription
        raise ConfigError(
            f"message queue {queue!r} is the queue of subscriber {subscriber!r} to topic {topic!r}: "
            f"nothing was dropped; unsubscribe instead (mq.unsubscribe({topic!r}, {subscriber!r})), "
            "which drops the queue with the subscription"
        )


def _check_same_settings(queue: str, wanted: dict[str, Any], row: Row | None) -> None:
    """create_queue of a queue that exists: the settings asked for must be its own."""
    if row is None:
        return  # dropped meanwhile: the caller's create found it and that is all
    info = _queue_info(row)
    have = {"max_length": info.max_length, "overflow": info.overflow, "durable": info.durable}
    if have != {key: wanted[key] for key in have}:
        raise ConfigError(
            f"message queue {queue!r} exists with max_length={info.max_length}, overflow={info.overflow!r}, "
            f"durable={info.durable}: change its bound with configure_queue(); durability is fixed "
            "(drop_queue and create it again)"
        )
