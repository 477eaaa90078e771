"""Reading: ``read`` (and with polling) hides the messages it returns for a while, ``pop``
deletes them; ``read_grouped_head`` reads in order within groups of messages (FIFO, PGMQ's
function of that name); on a typed queue, a message that does not match the type is archived
unread."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from functools import partial
from typing import Any, overload

from ..backends import Row
from ..backends.appconn import takes_app_conn
from ..core.config import check_queue_name, parse_duration
from ..errors import ConfigError, QueueNotFound
from ..policy.typed import QueueType
from .checks import _filter_paths, _filter_text
from .core import MAX_QTY, MessageQueueCore, Seconds
from .records import Message, Unreadable, _message_or_unreadable, _utc_text

log = logging.getLogger("batchq.mq")
GROUP_HEADER = "x-pgmq-group"  # the header that names a message's FIFO group (PGMQ's)


class Reading(MessageQueueCore):
    @takes_app_conn
    def read(
        self,
        queue: str,
        vt: Seconds,
        qty: int = 1,
        *,
        where: Mapping[str, Any] | None = None,
        conn: Any = None,
    ) -> list[Message]:
        """Take up to ``qty`` visible messages, oldest first, hidden from other readers for ``vt``.

        ``where`` keeps only messages that contain it (JSON containment of objects and
        scalars, the same on every backend): ``where={"kind": "mail"}``. Messages that do
        not match are never locked. Each returned message has ``read_ct`` incremented.
        With ``conn=`` the read is part of the caller's transaction: a rollback (or a crash
        before the commit) gives the messages back as they were, unread.
        """
        params = self._read_params(queue, vt, qty, where)
        messages = self._read_typed(params, conn)
        if not messages:
            self._existing(queue, conn)  # a misspelt queue fails rather than reading as empty forever
        return messages

    def read_with_poll(
        self,
        queue: str,
        vt: Seconds,
        qty: int = 1,
        max_poll_seconds: Seconds = 5,
        poll_interval_ms: int = 100,
        *,
        where: Mapping[str, Any] | None = None,
    ) -> list[Message]:
        """``read``, retried every ``poll_interval_ms`` until a message comes or the time is up."""
        params = self._read_params(queue, vt, qty, where)
        self._existing(queue)
        return self._poll(params, max_poll_seconds, poll_interval_ms)

    @takes_app_conn
    def read_grouped_head(self, queue: str, vt: Seconds, qty: int = 1, *, conn: Any = None) -> list[Message]:
        """A FIFO read by group: the oldest message of up to ``qty`` groups, hidden for ``vt``.

        A message's group is its header ``x-pgmq-group`` (``send(..., headers={"x-pgmq-group":
        "order-7"})``); messages without one form one default group. Only a group's oldest
        message is ever handed out, and only while it is visible: while it is held (read and
        not yet deleted or archived, its vt not run out) its group gives nothing, so each
        group has at most one message in flight and its messages are processed in id order.
        """
        params = {**self._read_params(queue, vt, qty, None), "grouped": True}
        messages = self._read_typed(params, conn)
        if not messages:
            self._existing(queue, conn)
        return messages

    def read_grouped_head_with_poll(
        self,
        queue: str,
        vt: Seconds,
        qty: int = 1,
        max_poll_seconds: Seconds = 5,
        poll_interval_ms: int = 100,
    ) -> list[Message]:
        """``read_grouped_head``, retried every ``poll_interval_ms`` until a message comes or
        the time is up."""
        params = {**self._read_params(queue, vt, qty, None), "grouped": True}
        self._existing(queue)
        return self._poll(params, max_poll_seconds, poll_interval_ms)

    def _poll(
        self, params: dict[str, Any], max_poll_seconds: Seconds, poll_interval_ms: int
    ) -> list[Message]:
        """Read with ``params`` every ``poll_interval_ms`` until a message comes or the time is up."""
        deadline = time.monotonic() + parse_duration(max_poll_seconds, "max_poll_seconds")
        interval = parse_duration(poll_interval_ms, "poll_interval_ms") / 1000
        while True:
            messages = self._read_typed(params)
            if messages or time.monotonic() >= deadline:
                return messages
            time.sleep(max(0.0, min(interval, deadline - time.monotonic())))

    def _read_params(
        self, queue: str, vt: Seconds, qty: int, where: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        check_queue_name(queue)
        _check_qty(qty)
        filter_text = None if where is None else _filter_text(where)
        paths = None if where is None else json.dumps(_filter_paths(where))
        return {
            "grouped": False,
            "queue": queue,
            "qty": qty,
            "where": filter_text,
            "where_paths": paths,  # MySQL: see mq_read
            "vt": parse_duration(vt, "vt"),
        }

    def _read_typed(self, params: dict[str, Any], conn: Any = None) -> list[Message]:
        """Read; archive the messages that cannot be read, and on a typed queue those that do
        not match its type (rows written around batchq), with the reason, and read again for as
        many as were archived. With ``conn``, all of it in the caller's transaction."""
        found: list[Message] = []
        while True:
            want = {**params, "qty": params["qty"] - len(found)}
            rows = self._read_rows(want, conn)
            messages = [row for row in rows if isinstance(row, Message)]
            for unreadable in (row for row in rows if isinstance(row, Unreadable)):
                self._archive_unreadable(params["queue"], unreadable, conn)
            matching = self._drop_mismatched(params["queue"], messages, conn)
            found.extend(matching)
            if len(matching) == len(rows) or len(found) >= params["qty"]:
                return sorted(found, key=lambda m: m.msg_id)

    def _archive_unreadable(self, queue: str, unreadable: Unreadable, conn: Any = None) -> None:
        """A message read (and hidden for its vt) that reads as no Message: archived with why,
        so that it neither fails the read nor comes back at the head of the queue."""
        log.warning("message %s of queue %r archived unread: %s", unreadable.msg_id, queue, unreadable.reason)
        params = {
            **self._message_params(queue, unreadable.msg_id, unreadable.read_ct),
            "reason": unreadable.reason,
        }
        self._on(conn, partial(self._archive_mismatched, params))

    def _reader_type(self, queue: str) -> QueueType:
        """A reader's view of the queue's type: re-read at most every CACHE_SECONDS."""
        known = self._types.fresh(queue)
        if known is not None:
            return known
        try:
            return self._read_type(queue)
        except QueueNotFound:
            return QueueType(None)  # dropped meanwhile: the read's own checks say so

    def _drop_mismatched(self, queue: str, messages: list[Message], conn: Any = None) -> list[Message]:
        if not messages:
            return messages
        known = self._reader_type(queue)
        if known.text is None:
            return messages
        matching = []
        for message in messages:
            found = known.problem(message.message)
            if found is None:
                matching.append(message)
                continue
            reason = f"message does not match the queue's type: {found[0]}: {found[1]}"
            log.warning("message %s of queue %r archived unread: %s", message.msg_id, queue, reason)
            params = {**self._message_params(queue, message.msg_id, message.read_ct), "reason": reason}
            self._on(conn, partial(self._archive_mismatched, params))
        return matching

    def _archive_mismatched(self, params: dict[str, Any], conn: Any) -> None:
        """Archived with the reason if our hold (its read_ct) still stands."""
        archive = self.backend.stores.messages.archive_mismatched
        archive(params["queue"], params["id"], params["read_ct"], params["reason"], conn)

    def _read_rows(self, params: dict[str, Any], conn: Any) -> list[Message | Unreadable]:
        """The messages read (hidden, counted), in id order; one that cannot be read is given as
        Unreadable rather than failing the read, which would roll it back to the queue's head.
        Without ``conn``, in a transaction of the store's own, retried."""
        rows = self.backend.stores.messages.read(
            params["queue"],
            vt=params["vt"],
            qty=params["qty"],
            where=params["where"],
            where_paths=params["where_paths"],
            grouped=params["grouped"],
            conn=conn,
        )
        return sorted((_message_or_unreadable(row) for row in rows), key=lambda m: m.msg_id)

    @overload
    def pop(self, queue: str, qty: None = None, *, conn: Any = None) -> Message | None: ...

    @overload
    def pop(self, queue: str, qty: int, *, conn: Any = None) -> list[Message]: ...

    @takes_app_conn
    def pop(self, queue: str, qty: int | None = None, *, conn: Any = None) -> Message | None | list[Message]:
        """Delete the oldest visible message and return it (at-most-once delivery); None when
        there is none. With ``qty``: up to that many, oldest first, as a list (PGMQ's pop(qty))."""
        check_queue_name(queue)
        wanted = 1 if qty is None else _check_qty(qty)
        found: list[Message] = []
        while len(found) < wanted:
            popped = self._pop_rows(queue, wanted - len(found), conn)
            if not popped:
                break
            # Unreadable ones are archived with why; typed mismatches too: pop again for them.
            found.extend(m for m in popped if isinstance(m, Message) and self._popped_matches(queue, m, conn))
        if not found:
            self._existing(queue, conn)
        found.sort(key=lambda m: m.msg_id)
        if qty is None:
            return found[0] if found else None
        return found

    def _popped_matches(self, queue: str, message: Message, conn: Any = None) -> bool:
        """True if a popped message fits the queue's type; else it goes to the archive with the
        reason (it is deleted already: a crash in between loses it, as pop's at-most-once allows)."""
        found = self._reader_type(queue).problem(message.message)
        if found is None:
            return True
        reason = f"message does not match the queue's type: {found[0]}: {found[1]}"
        log.warning("message %s of queue %r archived unread: %s", message.msg_id, queue, reason)
        params = {
            "vt": _utc_text(message.vt),
            "read_ct": message.read_ct,
            "enqueued_at": _utc_text(message.enqueued_at),
            "message": json.dumps(message.message),
            "headers": None if message.headers is None else json.dumps(message.headers),
        }
        archive = partial(self.backend.stores.messages.archive_popped, queue, message.msg_id, params, reason)
        self._on(conn, lambda conn: archive(conn), transaction=False)
        return False

    def _pop_rows(self, queue: str, qty: int, conn: Any) -> list[Message | Unreadable]:
        """Up to qty of the oldest visible messages, deleted. One that cannot be read is archived
        with why in the same transaction (failing would roll it back to the queue's head) and
        given as Unreadable. Without ``conn``, in a transaction of the store's own, retried."""

        def unreadable(row: Row, message: Message | Unreadable) -> str | None:
            if not isinstance(message, Unreadable):
                return None
            log.warning("message %s of queue %r archived unread: %s", message.msg_id, queue, message.reason)
            return message.reason

        pop = self.backend.stores.messages.pop
        return pop(queue, qty, convert=_message_or_unreadable, unreadable=unreadable, conn=conn)


def _check_qty(qty: int) -> int:
    if isinstance(qty, bool) or not isinstance(qty, int) or not 1 <= qty <= MAX_QTY:
        raise ConfigError(f"bad qty {qty!r}: use a whole number from 1 to {MAX_QTY}")
    return qty
