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
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .backends import Backend, OnDatabase, Row
from .config import Duration, check_queue_name, parse_duration
from .errors import ConfigError, MessageHeld, PayloadError, QueueNotFound
from .serializers import dumps, loads

if TYPE_CHECKING:
    from .pubsub import Subscription

Seconds = Duration
SENT_SHARDS = 16  # shard rows per queue's sent counter: concurrent senders rarely share one
MAX_QTY = 1000


@dataclass(frozen=True)
class Message:
    msg_id: int
    read_ct: int
    enqueued_at: datetime
    vt: datetime  # invisible to readers until then (UTC, the server's clock)
    message: Any
    headers: dict[str, Any] | None


@dataclass(frozen=True)
class QueueInfo:
    queue_name: str
    created_at: datetime


@dataclass(frozen=True)
class QueueMetrics:
    queue_name: str
    queue_length: int  # messages in the queue, held or not
    queue_visible_length: int  # readable now
    newest_msg_age_sec: float | None  # None when the queue is empty
    oldest_msg_age_sec: float | None
    total_messages: int  # ever sent (committed), purges and deletes notwithstanding
    scrape_time: datetime


class MessageQueue(OnDatabase):
    """Message queues in the batchq database at ``url`` (default ``$BATCHQ_URL``, then SQLite).

    Each thread gets its own connection, opened on first use. The tables come
    from ``batchq init-db`` (or ``init_db()``); queues from ``create_queue``.
    """

    # -- queues -------------------------------------------------------------------

    def create_queue(self, queue: str) -> bool:
        """Register a queue; False when it existed already (idempotent)."""
        params = {"queue": check_queue_name(queue)}
        backend = self.backend

        def create() -> bool:
            with backend.transaction():
                created = backend.execute("mq_queue_create", params) == 1
                backend.insert_many(
                    "mq_sent_shard_create", [{**params, "shard": s} for s in range(SENT_SHARDS)]
                )
            return created

        return backend.retrying(create)

    def drop_queue(self, queue: str) -> bool:
        """Delete a queue with its messages, archive and counter; False when there was none."""
        params = {"queue": check_queue_name(queue)}
        backend = self.backend

        def drop() -> bool:
            with backend.transaction():
                # The counter first: its row locks wait out sends in flight and make later sends
                # fail, so no message lands after the messages are deleted.
                backend.execute("mq_queue_drop_sent", params)
                existed = backend.execute("mq_queue_drop_meta", params) == 1
                backend.execute("mq_queue_drop_messages", params)
                backend.execute("mq_queue_drop_archive", params)
                return existed

        return backend.retrying(drop)

    def purge_queue(self, queue: str) -> int:
        """Delete every message of a queue, held or not; returns how many."""
        params = {"queue": self._existing(queue)}
        return self.backend.retrying(lambda: self.backend.execute("mq_purge", params))

    def list_queues(self) -> list[QueueInfo]:
        return [
            QueueInfo(row["queue_name"], _utc(row["created_at"]))
            for row in self.backend.fetchall("mq_queue_list")
        ]

    def metrics(self, queue: str) -> QueueMetrics:
        row = self.backend.fetchone("mq_metrics", {"queue": self._existing(queue)})
        assert row is not None  # an aggregate always returns a row
        return QueueMetrics(
            queue_name=queue,
            queue_length=int(row["queue_length"]),
            queue_visible_length=int(row["queue_visible_length"]),
            newest_msg_age_sec=_float_or_none(row["newest_msg_age_sec"]),
            oldest_msg_age_sec=_float_or_none(row["oldest_msg_age_sec"]),
            total_messages=int(row["total_messages"]),
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
        return found

    def _existing(self, queue: str) -> str:
        check_queue_name(queue)
        if self.backend.fetchone("mq_queue_get", {"queue": queue}) is None:
            raise _missing(queue)
        return queue

    # -- send ---------------------------------------------------------------------

    def send(
        self,
        queue: str,
        msg: Any,
        *,
        delay: Seconds | None = None,
        headers: Mapping[str, Any] | None = None,
        conn: Any = None,
    ) -> int:
        """Write one message, readable after ``delay``; returns its id."""
        return self.send_batch(queue, [msg], delay=delay, headers=headers, conn=conn)[0]

    def send_batch(
        self,
        queue: str,
        msgs: Iterable[Any],
        *,
        delay: Seconds | None = None,
        headers: Mapping[str, Any] | None = None,
        conn: Any = None,
    ) -> list[int]:
        """Write several messages in one transaction; returns their ids in order.

        Every message is validated before anything is written. The queue must exist.
        With ``conn=`` (the application's open PyMySQL / sqlite3 / psycopg connection) the
        messages join that connection's transaction: they exist only if the caller commits.
        """
        check_queue_name(queue)
        seconds = parse_duration(delay, "delay")
        head = None if headers is None else _json_text(dict(headers), "headers")
        rows = [
            {
                "queue": queue,
                "message": _json_text(msg, "message"),
                "headers": head,
                "delay": seconds,
            }
            for msg in msgs
        ]
        if not rows:
            return []
        backend = self.backend
        _check_sizes(rows, backend.payload_limit())
        if conn is not None:
            backend.check_connection(conn)
        # Measured as sent (MySQL: max_allowed_packet) before the counter or any message is.
        backend.check_statement_sizes("mq_send", rows, conn)
        if conn is not None:
            return self._insert(queue, rows, conn)

        def insert() -> list[int]:
            with backend.transaction():
                return self._insert(queue, rows)

        return backend.retrying(insert)

    def _insert(self, queue: str, rows: list[dict[str, Any]], conn: Any = None) -> list[int]:
        backend = self.backend
        counter = {"queue": queue, "shard": random.randrange(SENT_SHARDS), "n": len(rows)}
        # Counting first: an unknown queue fails before any message is written.
        if backend.execute("mq_count_sent", counter, conn=conn) != 1:
            raise _missing(queue)
        return [backend.insert("mq_send", row, conn=conn) for row in rows]

    # -- read ---------------------------------------------------------------------

    def read(
        self, queue: str, vt: Seconds, qty: int = 1, *, where: Mapping[str, Any] | None = None
    ) -> list[Message]:
        """Take up to ``qty`` visible messages, oldest first, hidden from other readers for ``vt``.

        ``where`` keeps only messages that contain it (JSON containment of objects and
        scalars, the same on every backend): ``where={"kind": "mail"}``. Messages that do
        not match are never locked. Each returned message has ``read_ct`` incremented.
        """
        params = self._read_params(queue, vt, qty, where)
        messages = self.backend.retrying(lambda: self._read_once(params))
        if not messages:
            self._existing(queue)  # a misspelt queue fails rather than reading as empty forever
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
        deadline = time.monotonic() + parse_duration(max_poll_seconds, "max_poll_seconds")
        interval = parse_duration(poll_interval_ms, "poll_interval_ms") / 1000
        while True:
            messages = self.backend.retrying(lambda: self._read_once(params))
            if messages or time.monotonic() >= deadline:
                return messages
            time.sleep(max(0.0, min(interval, deadline - time.monotonic())))

    def _read_params(
        self, queue: str, vt: Seconds, qty: int, where: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        check_queue_name(queue)
        if isinstance(qty, bool) or not isinstance(qty, int) or not 1 <= qty <= MAX_QTY:
            raise ConfigError(f"bad qty {qty!r}: use a whole number from 1 to {MAX_QTY}")
        filter_text = None if where is None else _filter_text(where)
        paths = None if where is None else json.dumps(_filter_paths(where))
        return {
            "queue": queue,
            "qty": qty,
            "where": filter_text,
            "where_paths": paths,  # MySQL: see mq_read
            "vt": parse_duration(vt, "vt"),
        }

    def _read_once(self, params: dict[str, Any]) -> list[Message]:
        backend = self.backend
        with _take(backend):
            rows = backend.fetchall("mq_read" if backend.skip_locked else "mq_read_no_skip", params)
            if rows and not backend.has_update_returning:  # locked above, marked here
                ids = [row["msg_id"] for row in rows]
                backend.execute("mq_read_mark", {**params, "ids": ids, "until": rows[0]["vt"]})
        return sorted((_message(row) for row in rows), key=lambda m: m.msg_id)

    def pop(self, queue: str) -> Message | None:
        """Delete the oldest visible message and return it (at-most-once delivery)."""
        params = {"queue": check_queue_name(queue)}
        message = self.backend.retrying(lambda: self._pop_once(params))
        if message is None:
            self._existing(queue)
        return message

    def _pop_once(self, params: dict[str, Any]) -> Message | None:
        backend = self.backend
        with _take(backend):
            row = backend.fetchone("mq_pop" if backend.skip_locked else "mq_pop_no_skip", params)
            if row is not None and not backend.has_update_returning:
                backend.execute("mq_pop_mark", {**params, "id": row["msg_id"]})
        return None if row is None else _message(row)

    # -- after reading ------------------------------------------------------------

    def delete(self, queue: str, msg_id: int, *, read_ct: int | None = None) -> bool:
        """Remove a message for good; False when it was gone already.

        With ``read_ct`` (the message's, from ``read``) it is a receipt: False, and nothing
        deleted, when the hold ran out and another reader has read the message since.
        """
        params = self._message_params(queue, msg_id, read_ct)
        return self.backend.retrying(lambda: self.backend.execute("mq_delete", params)) == 1

    def delete_batch(self, queue: str, msg_ids: Iterable[int]) -> list[int]:
        """Remove several messages in one transaction; returns the ids that were there."""
        return self._each(queue, msg_ids, lambda params: self.backend.execute("mq_delete", params) == 1)

    def archive(self, queue: str, msg_id: int, *, read_ct: int | None = None) -> bool:
        """Move a message to the archive (kept, with ``archived_at``); False when it was gone.

        ``read_ct`` is a receipt, as for ``delete``.
        """
        params = self._message_params(queue, msg_id, read_ct)
        backend = self.backend

        def move() -> bool:
            with backend.transaction():
                return self._archive_one(params)

        return backend.retrying(move)

    def archive_batch(self, queue: str, msg_ids: Iterable[int]) -> list[int]:
        """Archive several messages in one transaction; returns the ids that were there."""
        return self._each(queue, msg_ids, self._archive_one)

    def _archive_one(self, params: dict[str, Any]) -> bool:
        backend = self.backend
        if backend.fetchone("mq_message_lock", params) is None:  # locked: one archiver copies it
            return False
        backend.execute("mq_archive_copy", params)
        return backend.execute("mq_delete", params) == 1

    def _each(
        self, queue: str, msg_ids: Iterable[int], action: Callable[[dict[str, Any]], bool]
    ) -> list[int]:
        """Apply a per-message action to many ids in one transaction, in id order (no deadlocks)."""
        batch = [self._message_params(queue, msg_id) for msg_id in sorted(set(msg_ids))]
        backend = self.backend

        def run() -> list[int]:
            with backend.transaction():
                return [params["id"] for params in batch if action(params)]

        return backend.retrying(run) if batch else []

    def set_vt(self, queue: str, msg_id: int, vt: Seconds, *, read_ct: int | None = None) -> Message | None:
        """Hide a message until ``vt`` seconds from now (0: visible now); None when it is gone.

        ``read_ct`` is a receipt, as for ``delete``: None when someone else has read it since.
        """
        params = {**self._message_params(queue, msg_id, read_ct), "vt": parse_duration(vt, "vt")}
        backend = self.backend

        def update() -> Row | None:
            with backend.transaction():
                if backend.execute("mq_set_vt", params) != 1:
                    return None
                return backend.fetchone("mq_message_get", params)

        row = backend.retrying(update)
        return None if row is None else _message(row)

    def cancel(self, queue: str, msg_id: int) -> bool:
        """Withdraw a message that no consumer holds (visible, or delayed and never read).

        True: removed. False: no such message (deleted, archived or popped already).
        Raises MessageHeld when a reader holds it: its visibility has not run out yet.
        """
        params = self._message_params(queue, msg_id)
        backend = self.backend
        for _ in range(3):  # a hold can run out between the refused delete and the look
            if backend.retrying(lambda: backend.execute("mq_cancel", params)) == 1:
                return True
            row = backend.fetchone("mq_hold", params)
            if row is None:
                return False
            held = float(row["held_seconds"])
            if held > 0 and int(row["read_ct"]) > 0:
                raise MessageHeld(
                    f"message {msg_id} of queue {queue!r} is held by a consumer for another "
                    f"{held:.1f}s: not cancelled (delete it, or cancel once its visibility runs out)"
                )
        return False

    def get(self, queue: str, msg_id: int) -> Message | None:
        """A message as it stands, without reading it (no lock, read_ct unchanged)."""
        row = self.backend.fetchone("mq_message_get", self._message_params(queue, msg_id))
        return None if row is None else _message(row)

    # -- topics and subscribers (batchq.pubsub) ------------------------------------

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
        from .pubsub import subscribe

        return subscribe(self, topic, subscriber, policy=policy, max_tries=max_tries, vt=vt)

    def unsubscribe(self, topic: str, subscriber: str) -> bool:
        """Remove a subscription with its queue, copies and archive; False when there was none."""
        from .pubsub import unsubscribe

        return unsubscribe(self, topic, subscriber)

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
        from .pubsub import publish

        return publish(self, topic, msg, delay=delay, headers=headers, conn=conn)

    def subscriptions(self, topic: str | None = None) -> list[Subscription]:
        """Every subscription (of ``topic``), by topic and subscriber."""
        from .pubsub import subscriptions

        return subscriptions(self, topic)

    @staticmethod
    def _message_params(queue: str, msg_id: int, read_ct: int | None = None) -> dict[str, Any]:
        if isinstance(msg_id, bool) or not isinstance(msg_id, int):
            raise ConfigError(f"bad message id {msg_id!r}: use the int that send() or read() returned")
        if read_ct is not None and (isinstance(read_ct, bool) or not isinstance(read_ct, int)):
            raise ConfigError(f"bad read_ct {read_ct!r}: use the read_ct of the Message that read() returned")
        return {"queue": check_queue_name(queue), "id": msg_id, "read_ct": read_ct}


# -- helpers ----------------------------------------------------------------------------


def _take(backend: Backend) -> AbstractContextManager[None]:
    """The transaction around a read or pop.

    On PostgreSQL it is one statement, atomic in autocommit: BEGIN and COMMIT would only add
    two round trips (single-row reads measured 1.2-1.7x faster without, on a loaded host).
    MySQL must lock and mark in one transaction; SQLite takes the write lock up front with
    BEGIN IMMEDIATE.
    """
    return nullcontext() if backend.single_statement_claims else backend.transaction()


def _missing(queue: str) -> QueueNotFound:
    return QueueNotFound(f"message queue {queue!r} does not exist: create it with create_queue({queue!r})")


def _json_text(value: Any, what: str) -> str:
    """JSON text of a message or headers; raises PayloadError before anything is written."""
    data = dumps(value, "json", None)
    if data is None:  # dumps keeps None as SQL NULL; a message of null is the JSON null
        return "null"
    if what == "headers" and not data.startswith(b"{"):
        raise PayloadError("headers must be a JSON object (a dict)")
    return data.decode("utf-8")


def _check_sizes(rows: list[dict[str, Any]], limit: int) -> None:
    """Refuse a message larger than batchq stores, before sending anything."""
    for row in rows:
        size = len(row["message"].encode("utf-8"))
        if size > limit:
            raise PayloadError(
                f"message is {size:,} bytes of JSON, more than this database accepts "
                f"({limit:,} bytes): store large data elsewhere and send a reference to it"
            )


def _filter_text(where: Mapping[str, Any]) -> str:
    """A read filter: a JSON object of objects and scalars, portable to every backend."""
    if not isinstance(where, Mapping):
        raise ConfigError(f"bad where {where!r}: use a dict, as in where={{'kind': 'mail'}}")
    _check_filter(where)
    return _json_text(dict(where), "where")


def _filter_paths(node: Mapping[str, Any], path: str = "$") -> list[str]:
    """The JSON path of every node of a filter, the root first (keys hold no quote or backslash)."""
    paths = [path]
    for key, value in node.items():
        child = f'{path}."{key}"'
        paths.extend(_filter_paths(value, child) if isinstance(value, Mapping) else [child])
    return paths


def _check_filter(node: Mapping[str, Any]) -> None:
    for key, value in node.items():
        if not isinstance(key, str) or '"' in key or "\\" in key:
            raise ConfigError(f"bad where key {key!r}: use strings without quotes or backslashes")
        if isinstance(value, Mapping):
            _check_filter(value)
        elif isinstance(value, (list, tuple)):
            # Array containment differs between PostgreSQL, MySQL and SQLite JSON functions.
            raise ConfigError(f"where[{key!r}] is a list: filters match objects and scalars only")


def _message(row: Row) -> Message:
    return Message(
        msg_id=int(row["msg_id"]),
        read_ct=int(row["read_ct"]),
        enqueued_at=_utc(row["enqueued_at"]),
        vt=_utc(row["vt"]),
        message=_json_value(row["message"]),
        headers=_json_value(row["headers"]),
    )


def _json_value(value: str | bytes | None) -> Any:
    """Every dialect hands back JSON text (PostgreSQL's queries cast jsonb to text)."""
    if value is None:
        return None
    return loads(value.encode("utf-8") if isinstance(value, str) else bytes(value), "json", None)


def _utc(value: Any) -> datetime:
    """A server time as an aware UTC datetime (MySQL: naive UTC; SQLite: UTC text)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


__all__ = ["Message", "MessageQueue", "QueueInfo", "QueueMetrics"]
