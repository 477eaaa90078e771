"""Sending: a message or a batch, checked against the queue's type and size limit, counted
on the queue's sent counter, and fitted into a bounded queue."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from ..backends.appconn import takes_app_conn
from ..core.config import check_queue_name
from ..errors import BackendError, QueueFull
from ..policy.typed import QueueType
from .checks import _check_sizes, _check_type, _headers_per_message, _json_texts, _when
from .core import SENT_SHARDS, MessageQueueCore, When, _missing

TYPE_ATTEMPTS = 5  # sends that find the queue's type changed under them, before giving up


class Sending(MessageQueueCore):
    @takes_app_conn
    def send(
        self,
        queue: str,
        msg: Any,
        *,
        delay: When | None = None,
        headers: Mapping[str, Any] | None = None,
        conn: Any = None,
    ) -> int:
        """Write one message, readable after ``delay`` (seconds, a duration, or an aware
        datetime: that time on the server's clock; a past time is now); returns its id."""
        return self.send_batch(
            queue, [msg], delay=delay, headers=None if headers is None else [headers], conn=conn
        )[0]

    @takes_app_conn
    def send_batch(
        self,
        queue: str,
        msgs: Iterable[Any],
        *,
        delay: When | None = None,
        headers: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None = None,
        conn: Any = None,
    ) -> list[int]:
        """Write several messages in one transaction; returns their ids in order.

        ``headers``: one dict (or None) per message, in order, as PGMQ; a single dict is every
        message's. Every message is validated before anything is written. The queue must exist.
        With ``conn=`` (what the application holds: batchq.backends.appconn) the messages join that
        transaction: they exist only if the caller commits.
        A bounded queue that is full drops its oldest messages or raises QueueFull (nothing
        written), by its overflow policy.
        """
        check_queue_name(queue)
        messages = _json_texts(list(msgs))
        heads = _headers_per_message(headers, len(messages))
        rows = [
            {"queue": queue, "message": message, "headers": head, **_when(delay, "delay")}
            for message, head in zip(messages, heads)
        ]
        if not rows:
            return []
        backend = self.backend
        _check_sizes(rows, backend.payload_limit())
        # Measured as sent (MySQL: max_allowed_packet) before the counter or any message is.
        backend.stores.messages.check_send_sizes(rows, conn)
        for _ in range(TYPE_ATTEMPTS):
            # The type as last seen (untyped at first): the send refuses a stale one (_insert).
            known = self._types.get(queue) or QueueType(None)
            _check_type(known, queue, rows)
            try:
                return self._on(conn, partial(self._insert, queue, rows, known=known))
            except _TypeChanged:
                continue
        raise BackendError(
            f"the type of message queue {queue!r} changed {TYPE_ATTEMPTS} times while sending: send again"
        )

    def _insert(self, queue: str, rows: list[dict[str, Any]], conn: Any, known: QueueType) -> list[int]:
        store = self.backend.stores.messages
        # One shard per application connection: several bounded sends in one of its transactions
        # then lock one shard and the queue's row, in that order, and cannot deadlock each other.
        shard = random.randrange(SENT_SHARDS) if conn is None else (id(conn) >> 4) % SENT_SHARDS
        # The shard's lock first: an unknown queue fails before any message is written, and the
        # queue's settings are read as they stand (configure_queue waits for this send).
        settings = store.send_settings(queue, shard, conn)
        if settings is None:
            raise _missing(queue)
        bound = settings.bound
        if bound is not None:
            self._make_room(queue, bound.max_length, bound.overflow, len(rows), conn)
        # Counted only where the shard's type is the one the rows were checked against: else
        # learn the new type and check them again (batchq.policy.typed).
        if not store.count_sent(queue, shard, len(rows), known.hash, conn):
            self._read_type(queue, conn)
            raise _TypeChanged
        # A non-durable queue's own transaction (never the caller's: its own writes must stay
        # durable) commits without waiting for the WAL flush.
        return store.insert(rows, durable=settings.durable, conn=conn)

    def _make_room(self, queue: str, max_length: int, overflow: str, count: int, conn: Any) -> None:
        """Before a bounded queue takes ``count`` messages: refuse, or drop its oldest ones.

        Bounded sends to one queue take turns on its registration row (mq_queue_lock), so two
        producers at the limit never both see room for one message; the COUNT is then exact but
        for consumers' deletes, which only make room.
        """
        if count > max_length:
            raise QueueFull(
                f"a batch of {count} messages is more than queue {queue!r} holds (max_length "
                f"{max_length}): nothing was sent; send at most {max_length} at a time"
            )
        store = self.backend.stores.messages
        store.lock(queue, conn)
        length = store.length(queue, conn)
        excess = length + count - max_length
        if excess <= 0:
            return
        if overflow == "reject":
            raise QueueFull(
                f"queue {queue!r} is full ({length} of max_length {max_length} messages, "
                "overflow='reject'): nothing was sent; consume it, or raise its bound with configure_queue()"
            )
        self._drop_oldest(queue, excess, conn)


class _TypeChanged(Exception):
    """A send found the queue's type changed since it checked its messages: check them again."""
