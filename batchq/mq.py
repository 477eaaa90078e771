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
import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from .backends import Backend, OnDatabase, Row
from .bounds import check_bound, stored_bound
from .config import Duration, check_queue_name, parse_duration
from .errors import BackendError, ConfigError, MessageHeld, PayloadError, QueueFull, QueueNotFound
from .serializers import dumps, loads
from .typed import QueueType, SchemaSpec, TypeCache, schema_hash, schema_text

log = logging.getLogger("batchq.mq")

if TYPE_CHECKING:
    from .pubsub import Subscription

Seconds = Duration
When = Duration | datetime  # a delay, or an absolute (aware) time
T = TypeVar("T")
SENT_SHARDS = 16  # shard rows per queue's sent counter: concurrent senders rarely share one
MAX_QTY = 1000
OVERFLOW_REASON = "overflow"  # the archive's reason for a message a full drop_oldest queue dropped
# Rows per prune statement, each its own transaction: a batch holds its row locks for a few
# milliseconds (archivers and other prunes never wait long) and writes a bounded amount of
# undo/WAL, however large the archive.
PRUNE_BATCH = 1000
TYPE_ATTEMPTS = 5  # sends that find the queue's type changed under them, before giving up
CHECK_PAGE = 1000  # messages per read when alter_queue checks a queue against a new type


@dataclass(frozen=True)
class Message:
    msg_id: int
    read_ct: int
    enqueued_at: datetime
    vt: datetime  # invisible to readers until then (UTC, the server's clock)
    message: Any
    headers: dict[str, Any] | None


@dataclass(frozen=True)
class ArchivedMessage:
    msg_id: int
    read_ct: int
    enqueued_at: datetime
    vt: datetime
    archived_at: datetime
    message: Any
    headers: dict[str, Any] | None
    reason: str | None  # None: a consumer archived it; "overflow": a full drop_oldest queue dropped it


@dataclass(frozen=True)
class QueueInfo:
    queue_name: str
    created_at: datetime
    max_length: int | None = None  # None: unbounded
    overflow: str | None = None  # "drop_oldest" or "reject" when bounded
    durable: bool = True  # False: PostgreSQL UNLOGGED (emptied by a server crash)


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

    Every operation that writes takes ``conn=``: the application's open PyMySQL / sqlite3 /
    psycopg connection, whose transaction it then joins (nothing is committed or rolled back
    by batchq). A consumer can so read a message, write its effects and delete the message
    in one transaction.
    """

    # -- queues -------------------------------------------------------------------

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

        ``schema`` declares the type of its messages (batchq.typed): a JSON Schema (a dict), or a
        dataclass or TypedDict one is derived from. An existing queue with another type is left
        alone and raises ConfigError: change a type with alter_queue.
        """
        settings = _settings(check_queue_name(queue), max_length, overflow, durable)
        if not durable and self.backend.dialect != "postgresql":
            raise ConfigError(
                f"durable=False needs PostgreSQL (UNLOGGED tables); {self.backend.dialect} has no "
                "table that is transactional yet skips the log: create the queue durable"
            )
        text = schema_text(schema)
        backend = self.backend
        explicit = max_length is not None or overflow is not None or not durable

        def create(conn: Any) -> bool:
            if backend.execute("mq_queue_create", {"queue": queue}, conn) != 1:
                if explicit:
                    _check_same_settings(queue, settings, backend.fetchone("mq_queue_get", settings, conn))
                if text is not None:
                    self._check_same_type(queue, text, conn)
                return False
            rows = [{**settings, "shard": shard} for shard in range(SENT_SHARDS)]
            backend.insert_many("mq_sent_shard_create", rows, conn)
            if text is not None:
                self._set_type(queue, text, conn)
            return True

        return self._on(conn, create)

    def configure_queue(
        self, queue: str, *, max_length: int | None, overflow: str | None = None, conn: Any = None
    ) -> int:
        """Set (or with ``max_length=None`` lift) a queue's bound; returns how many messages a
        drop_oldest queue archived at once to fit a lower bound (a reject queue keeps them and
        refuses sends until it is under its bound). Sends in flight finish first."""
        settings = _settings(check_queue_name(queue), max_length, overflow, True)
        backend = self.backend

        def configure(conn: Any) -> int:
            if backend.execute("mq_queue_configure", settings, conn) == 0:
                raise _missing(queue)
            if max_length is None or settings["overflow"] == "reject":
                return 0
            backend.fetchone("mq_queue_lock", settings, conn)
            length = int(_first(backend.fetchone("mq_queue_length", settings, conn), "length"))
            return self._drop_oldest(queue, length - max_length, conn)

        return self._on(conn, configure)

    def alter_queue(self, queue: str, *, schema: SchemaSpec | None, force: bool = False) -> int:
        """Change the type of a queue's messages (None: untyped); returns how many of the messages
        in the queue do not match it (0 unless forced).

        Refused (ConfigError, nothing changed) while a message in the queue, held or not, does not
        match the new type, unless ``force``: such messages are then archived with the reason when
        read. Sends in flight are waited out, and every later send, in any process, is checked
        against the new type (it rides on the send's counter update: batchq.typed).
        """
        check_queue_name(queue)
        if not isinstance(force, bool):
            raise ConfigError(f"bad force {force!r}: use True or False")
        text = schema_text(schema)
        backend = self.backend

        def alter() -> int:
            with backend.transaction():
                hashed = {"queue": queue, "schema_hash": schema_hash(text)}
                if backend.execute("mq_sent_set_schema", hashed) == 0:
                    raise _missing(queue)
                mismatched = self._mismatched(queue, QueueType(text), force)
                backend.execute("mq_queue_set_schema", {"queue": queue, "schema": text})
                return mismatched

        mismatched = backend.retrying(alter)
        self._types.learn(queue, text)
        return mismatched

    def queue_schema(self, queue: str) -> dict[str, Any] | None:
        """The JSON Schema of a queue's messages, as stored; None when it is untyped."""
        return self._read_type(self._existing(queue)).schema

    @property
    def _types(self) -> TypeCache:
        """The queues' types as this object last saw them."""
        types: TypeCache | None = self.__dict__.get("_type_cache")
        if types is None:
            types = self.__dict__["_type_cache"] = TypeCache()
        return types

    def _set_type(self, queue: str, text: str | None, conn: Any = None) -> None:
        params = {"queue": queue, "schema": text, "schema_hash": schema_hash(text)}
        self.backend.execute("mq_sent_set_schema", params, conn)
        self.backend.execute("mq_queue_set_schema", params, conn)

    def _check_same_type(self, queue: str, text: str, conn: Any = None) -> None:
        row = self.backend.fetchone("mq_queue_schema", {"queue": queue}, conn)
        stored = None if row is None else row["payload_schema"]
        if stored != text:
            raise ConfigError(
                f"message queue {queue!r} exists with {'no type' if stored is None else 'another type'}: "
                f"change it with alter_queue({queue!r}, schema=...)"
            )

    def _read_type(self, queue: str, conn: Any = None) -> QueueType:
        """The queue's type as stored now (QueueNotFound if there is no queue), remembered."""
        row = self.backend.fetchone("mq_queue_schema", {"queue": queue}, conn=conn)
        if row is None:
            raise _missing(queue)
        return self._types.learn(queue, row["payload_schema"])

    def _mismatched(self, queue: str, new: QueueType, force: bool) -> int:
        """How many messages of the queue do not match a new type; without force, the first one
        raises ConfigError."""
        if new.text is None:
            return 0
        after, mismatched = 0, 0
        while True:
            params = {"queue": queue, "after": after, "limit": CHECK_PAGE}
            page = self.backend.fetchall("mq_queue_messages", params)
            for row in page:
                reason = new.reason(row["message"])
                if reason is not None and not force:
                    raise ConfigError(
                        f"message {row['msg_id']} of queue {queue!r} does not match the new type "
                        f"({reason.split(': ', 1)[1]}): type not changed; wait until such messages are "
                        "consumed, or pass force=True (they are then archived with the reason when read)"
                    )
                mismatched += reason is not None
            if len(page) < CHECK_PAGE:
                return mismatched
            after = int(page[-1]["msg_id"])

    def drop_queue(self, queue: str, *, conn: Any = None) -> bool:
        """Delete a queue with its messages, archive and counter; False when there was none."""
        params = {"queue": check_queue_name(queue)}
        backend = self.backend

        def drop(conn: Any) -> bool:
            # The counter first: its row locks wait out sends in flight and make later sends
            # fail, so no message lands after the messages are deleted.
            backend.execute("mq_queue_drop_sent", params, conn)
            existed = backend.execute("mq_queue_drop_meta", params, conn) == 1
            backend.execute("mq_queue_drop_messages", params, conn)
            backend.execute("mq_queue_drop_archive", params, conn)
            return existed

        return self._on(conn, drop)

    def purge_queue(self, queue: str, *, conn: Any = None) -> int:
        """Delete every message of a queue, held or not; returns how many."""
        params = {"queue": check_queue_name(queue)}

        def purge(conn: Any) -> int:
            self._existing(queue, conn)
            return self.backend.execute("mq_purge", params, conn)

        return self._on(conn, purge, transaction=False)

    def list_queues(self) -> list[QueueInfo]:
        return [_queue_info(row) for row in self.backend.fetchall("mq_queue_list")]

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

    def _existing(self, queue: str, conn: Any = None) -> str:
        check_queue_name(queue)
        if self.backend.fetchone("mq_queue_get", {"queue": queue}, conn) is None:
            raise _missing(queue)
        return queue

    def _on(self, conn: Any, action: Callable[[Any], T], *, transaction: bool = True) -> T:
        """Run ``action(conn)`` in the caller's transaction on ``conn``; without one, in a short
        transaction of our own (one statement: autocommit), retried on deadlocks."""
        backend = self.backend
        if conn is not None:
            backend.check_connection(conn)
            return action(conn)
        if not transaction:
            return backend.retrying(lambda: action(None))

        def own() -> T:
            with backend.transaction():
                return action(None)

        return backend.retrying(own)

    # -- send ---------------------------------------------------------------------

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
        With ``conn=`` (the application's open PyMySQL / sqlite3 / psycopg connection) the
        messages join that connection's transaction: they exist only if the caller commits.
        A bounded queue that is full drops its oldest messages or raises QueueFull (nothing
        written), by its overflow policy.
        """
        check_queue_name(queue)
        messages = [_json_text(msg, "message") for msg in msgs]
        heads = _headers_per_message(headers, len(messages))
        rows = [
            {"queue": queue, "message": message, "headers": head, **_when(delay, "delay")}
            for message, head in zip(messages, heads)
        ]
        if not rows:
            return []
        backend = self.backend
        _check_sizes(rows, backend.payload_limit())
        if conn is not None:
            backend.check_connection(conn)
        # Measured as sent (MySQL: max_allowed_packet) before the counter or any message is.
        backend.check_statement_sizes("mq_send", rows, conn)
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
        backend = self.backend
        # One shard per application connection: several bounded sends in one of its transactions
        # then lock one shard and the queue's row, in that order, and cannot deadlock each other.
        shard = random.randrange(SENT_SHARDS) if conn is None else (id(conn) >> 4) % SENT_SHARDS
        counter = {"queue": queue, "shard": shard, "n": len(rows), "schema_hash": known.hash}
        # The shard's lock first: an unknown queue fails before any message is written, and the
        # queue's settings are read as they stand (configure_queue waits for this send).
        settings = backend.fetchone("mq_send_settings", counter, conn)
        if settings is None:
            raise _missing(queue)
        bound = stored_bound(settings)
        if bound is not None:
            self._make_room(queue, bound.max_length, bound.overflow, len(rows), conn)
        # Counted only where the shard's type is the one the rows were checked against: else
        # learn the new type and check them again (batchq.typed).
        if backend.execute("mq_count_sent", counter, conn) != 1:
            self._read_type(queue, conn)
            raise _TypeChanged
        if _is_true(settings["durable"]):
            return [backend.insert("mq_send", row, conn) for row in rows]
        if conn is None:  # never in the caller's transaction: its own writes must stay durable
            backend.execute("mq_send_async_commit", None, conn)
        return [backend.insert("mq_send_unlogged", row, conn) for row in rows]

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
        backend = self.backend
        params = {"queue": queue}
        backend.fetchone("mq_queue_lock", params, conn)
        length = int(_first(backend.fetchone("mq_queue_length", params, conn), "length"))
        excess = length + count - max_length
        if excess <= 0:
            return
        if overflow == "reject":
            raise QueueFull(
                f"queue {queue!r} is full ({length} of max_length {max_length} messages, "
                "overflow='reject'): nothing was sent; consume it, or raise its bound with configure_queue()"
            )
        self._drop_oldest(queue, excess, conn)

    def _drop_oldest(self, queue: str, excess: int, conn: Any) -> int:
        """Archive (reason "overflow") and delete the ``excess`` oldest messages, waiting ones
        (no consumer holds them) first; returns how many."""
        backend = self.backend
        # Messages other transactions have locked are passed over while others can go; a server
        # without SKIP LOCKED waits for them.
        queries = ("mq_overflow_victims", "mq_overflow_victims_any", "mq_overflow_victims_wait")
        dropped = 0
        while excess > 0:
            params = {"queue": queue, "n": excess}
            victims: list[Row] = []
            for name in queries if backend.skip_locked else queries[-1:]:
                victims = backend.fetchall(name, params, conn)
                if victims:
                    break
            if not victims:
                break  # the queue emptied meanwhile
            for victim in victims:
                moved = {"queue": queue, "id": victim["id"], "read_ct": None, "reason": OVERFLOW_REASON}
                backend.execute("mq_archive_copy", moved, conn)
                dropped += backend.execute("mq_delete", moved, conn)
            excess -= len(victims)  # fewer than asked: the next pass takes held or locked ones
        return dropped

    # -- read ---------------------------------------------------------------------

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

    def _read_typed(self, params: dict[str, Any], conn: Any = None) -> list[Message]:
        """Read; on a typed queue, archive the messages that do not match its type (rows written
        around batchq) with the reason, and read again for as many as were archived. With
        ``conn``, all of it in the caller's transaction."""
        found: list[Message] = []
        if conn is not None:
            self.backend.check_connection(conn)
        while True:
            want = {**params, "qty": params["qty"] - len(found)}
            if conn is not None:
                messages = self._read_rows(want, conn)
            else:
                messages = self.backend.retrying(partial(self._read_once, want))
            matching = self._drop_mismatched(params["queue"], messages, conn)
            found.extend(matching)
            if len(matching) == len(messages) or len(found) >= params["qty"]:
                return sorted(found, key=lambda m: m.msg_id)

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
        backend = self.backend
        if backend.fetchone("mq_message_lock", params, conn) is not None:  # our hold still stands
            backend.execute("mq_archive_invalid", params, conn)
            backend.execute("mq_delete", params, conn)

    def _read_once(self, params: dict[str, Any]) -> list[Message]:
        with _take(self.backend):
            return self._read_rows(params, None)

    def _read_rows(self, params: dict[str, Any], conn: Any) -> list[Message]:
        backend = self.backend
        rows = backend.fetchall("mq_read" if backend.skip_locked else "mq_read_no_skip", params, conn)
        if rows and not backend.has_update_returning:  # locked above, marked here
            ids = [row["msg_id"] for row in rows]
            backend.execute("mq_read_mark", {**params, "ids": ids, "until": rows[0]["vt"]}, conn)
        return sorted((_message(row) for row in rows), key=lambda m: m.msg_id)

    def pop(self, queue: str, *, conn: Any = None) -> Message | None:
        """Delete the oldest visible message and return it (at-most-once delivery)."""
        params = {"queue": check_queue_name(queue)}
        while True:
            if conn is not None:
                self.backend.check_connection(conn)
                message = self._pop_row(params, conn)
            else:
                message = self.backend.retrying(lambda: self._pop_once(params))
            if message is None or self._popped_matches(queue, message, conn):
                break
        if message is None:
            self._existing(queue, conn)
        return message

    def _popped_matches(self, queue: str, message: Message, conn: Any = None) -> bool:
        """True if a popped message fits the queue's type; else it goes to the archive with the
        reason (it is deleted already: a crash in between loses it, as pop's at-most-once allows)."""
        found = self._reader_type(queue).problem(message.message)
        if found is None:
            return True
        reason = f"message does not match the queue's type: {found[0]}: {found[1]}"
        log.warning("message %s of queue %r archived unread: %s", message.msg_id, queue, reason)
        params = {
            "id": message.msg_id,
            "queue": queue,
            "vt": _utc_text(message.vt),
            "read_ct": message.read_ct,
            "enqueued_at": _utc_text(message.enqueued_at),
            "message": json.dumps(message.message),
            "headers": None if message.headers is None else json.dumps(message.headers),
            "reason": reason,
        }
        archive = partial(self.backend.execute, "mq_archive_popped", params)
        self._on(conn, lambda conn: archive(conn), transaction=False)
        return False

    def _pop_once(self, params: dict[str, Any]) -> Message | None:
        with _take(self.backend):
            return self._pop_row(params, None)

    def _pop_row(self, params: dict[str, Any], conn: Any) -> Message | None:
        backend = self.backend
        row = backend.fetchone("mq_pop" if backend.skip_locked else "mq_pop_no_skip", params, conn)
        if row is not None and not backend.has_update_returning:
            backend.execute("mq_pop_mark", {**params, "id": row["msg_id"]}, conn)
        return None if row is None else _message(row)

    # -- after reading ------------------------------------------------------------

    def delete(self, queue: str, msg_id: int, *, read_ct: int | None = None, conn: Any = None) -> bool:
        """Remove a message for good; False when it was gone already.

        With ``read_ct`` (the message's, from ``read``) it is a receipt: False, and nothing
        deleted, when the hold ran out and another reader has read the message since.
        """
        params = self._message_params(queue, msg_id, read_ct)
        return self._on(
            conn, lambda conn: self.backend.execute("mq_delete", params, conn) == 1, transaction=False
        )

    def delete_batch(self, queue: str, msg_ids: Iterable[int], *, conn: Any = None) -> list[int]:
        """Remove several messages in one transaction; returns the ids that were there."""
        return self._each(
            queue, msg_ids, lambda params, conn: self.backend.execute("mq_delete", params, conn) == 1, conn
        )

    def archive(self, queue: str, msg_id: int, *, read_ct: int | None = None, conn: Any = None) -> bool:
        """Move a message to the archive (kept, with ``archived_at``); False when it was gone.

        ``read_ct`` is a receipt, as for ``delete``.
        """
        params = self._message_params(queue, msg_id, read_ct)
        return self._on(conn, lambda conn: self._archive_one(params, conn))

    def archive_batch(self, queue: str, msg_ids: Iterable[int], *, conn: Any = None) -> list[int]:
        """Archive several messages in one transaction; returns the ids that were there."""
        return self._each(queue, msg_ids, self._archive_one, conn)

    def _archive_one(self, params: dict[str, Any], conn: Any) -> bool:
        backend = self.backend
        if backend.fetchone("mq_message_lock", params, conn) is None:  # locked: one archiver copies it
            return False
        backend.execute("mq_archive_copy", {**params, "reason": None}, conn)
        return backend.execute("mq_delete", params, conn) == 1

    def _each(
        self,
        queue: str,
        msg_ids: Iterable[int],
        action: Callable[[dict[str, Any], Any], bool],
        conn: Any,
    ) -> list[int]:
        """Apply a per-message action to many ids in one transaction, in id order (no deadlocks)."""
        batch = [self._message_params(queue, msg_id) for msg_id in sorted(set(msg_ids))]
        if not batch:
            return []
        return self._on(conn, lambda conn: [params["id"] for params in batch if action(params, conn)])

    def set_vt(
        self, queue: str, msg_id: int, vt: When, *, read_ct: int | None = None, conn: Any = None
    ) -> Message | None:
        """Hide a message until ``vt`` seconds from now (0: visible now), or until ``vt`` as an
        aware datetime (on the server's clock; a past time is now); None when it is gone.

        ``read_ct`` is a receipt, as for ``delete``: None when someone else has read it since.
        """
        when = _when(vt, "vt")
        params = {**self._message_params(queue, msg_id, read_ct), "vt": when["delay"], "at": when["at"]}
        backend = self.backend

        def update(conn: Any) -> Row | None:
            if backend.execute("mq_set_vt", params, conn) != 1:
                return None
            return backend.fetchone("mq_message_get", params, conn)

        row = self._on(conn, update)
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

    def get(self, queue: str, msg_id: int, *, conn: Any = None) -> Message | None:
        """A message as it stands, without reading it (no lock, read_ct unchanged)."""
        row = self.backend.fetchone("mq_message_get", self._message_params(queue, msg_id), conn)
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

    # -- the archive ----------------------------------------------------------------

    def read_archive(
        self,
        queue: str,
        *,
        after_id: int = 0,
        limit: int = 100,
        since: datetime | None = None,
        until: datetime | None = None,
        reason: str | None = None,
        conn: Any = None,
    ) -> list[ArchivedMessage]:
        """A page of a queue's archive in id order: the messages after ``after_id`` (pass the
        last one's id for the next page), at most ``limit`` (1-1000). ``since``/``until``: aware
        datetimes, archived at or after / before; ``reason``: only messages archived for it
        ("overflow": dropped by a full queue)."""
        check_queue_name(queue)
        if isinstance(after_id, bool) or not isinstance(after_id, int) or after_id < 0:
            raise ConfigError(f"bad after_id {after_id!r}: use 0 or the msg_id of the last message of a page")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_QTY:
            raise ConfigError(f"bad limit {limit!r}: use a whole number from 1 to {MAX_QTY}")
        if reason is not None and not isinstance(reason, str):
            raise ConfigError(
                f"bad reason {reason!r}: use a string such as {OVERFLOW_REASON!r}, or None for any"
            )
        params = {
            "queue": queue,
            "after_id": after_id,
            "limit": limit,
            "since": _epoch(since, "since"),
            "until": _epoch(until, "until"),
            "reason": reason,
        }
        if conn is not None:
            self.backend.check_connection(conn)
        rows = self.backend.fetchall("mq_archive_read", params, conn)
        if not rows:
            self._existing(queue, conn)
        return [_archived(row) for row in rows]

    def prune_archive(
        self, older_than: Seconds, *, queue: str | None = None, batch: int = PRUNE_BATCH
    ) -> int:
        """Delete archived messages archived more than ``older_than`` ago (of one queue, or of
        all), ``batch`` rows per transaction, oldest first; returns how many."""
        params = {
            "older_than": parse_duration(older_than, "older_than"),
            "queue": None if queue is None else check_queue_name(queue),
            "batch": batch,
        }
        if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 100_000:
            raise ConfigError(f"bad batch {batch!r}: use a whole number of rows from 1 to 100000")
        backend = self.backend
        pruned = 0
        while True:
            deleted = backend.retrying(lambda: backend.execute("mq_archive_prune", params))
            pruned += deleted
            if deleted < batch:
                return pruned


# -- helpers ----------------------------------------------------------------------------


def _take(backend: Backend) -> AbstractContextManager[None]:
    """The transaction around a read or pop.

    On PostgreSQL it is one statement, atomic in autocommit: BEGIN and COMMIT would only add
    two round trips (single-row reads measured 1.2-1.7x faster without, on a loaded host).
    MySQL must lock and mark in one transaction; SQLite takes the write lock up front with
    BEGIN IMMEDIATE.
    """
    return nullcontext() if backend.single_statement_claims else backend.transaction()


def _settings(queue: str, max_length: int | None, overflow: str | None, durable: bool) -> dict[str, Any]:
    """A queue's send settings as stored, checked before anything is written."""
    policy = check_bound(max_length, overflow)
    if not isinstance(durable, bool):
        raise ConfigError(f"bad durable {durable!r}: use True or False")
    return {"queue": queue, "max_length": max_length, "overflow": policy, "durable": durable}


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


def _queue_info(row: Row) -> QueueInfo:
    bound = stored_bound(row)
    return QueueInfo(
        queue_name=row["queue_name"],
        created_at=_utc(row["created_at"]),
        max_length=None if bound is None else bound.max_length,
        overflow=None if bound is None else bound.overflow,
        durable=_is_true(row["durable"]),
    )


def _is_true(value: Any) -> bool:
    """A stored flag (PostgreSQL bool, MySQL/SQLite 0/1); NULL (no counter row) is durable."""
    return value is None or bool(value)


def _first(row: Row | None, column: str) -> Any:
    assert row is not None  # an aggregate always returns a row
    return row[column]


def _headers_per_message(
    headers: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None, count: int
) -> list[str | None]:
    """send_batch's headers as JSON text, one per message: a list gives each its own, one dict all."""
    if headers is None:
        return [None] * count
    if isinstance(headers, Mapping):
        return [_json_text(dict(headers), "headers")] * count
    if isinstance(headers, (str, bytes)) or not isinstance(headers, Sequence):
        raise ConfigError(f"bad headers {headers!r}: use a dict, or a list of one dict (or None) per message")
    if len(headers) != count:
        raise ConfigError(
            f"headers has {len(headers)} entries for {count} messages: give one dict (or None) per message"
        )
    return [None if head is None else _json_text(_header_dict(head), "headers") for head in headers]


def _header_dict(head: Any) -> dict[str, Any]:
    if not isinstance(head, Mapping):
        raise PayloadError("headers must be a JSON object (a dict)")
    return dict(head)


def _when(value: When | None, what: str) -> dict[str, Any]:
    """A delay in seconds, or an absolute time as Unix seconds (the SQL keeps the later of it and
    the server's now): {"delay": ..., "at": ...}."""
    if isinstance(value, datetime):
        return {"delay": 0.0, "at": _epoch(value, what)}
    return {"delay": parse_duration(value, what), "at": None}


def _epoch(value: datetime | None, what: str) -> float | None:
    """An aware datetime as Unix seconds; a naive one is refused (whose clock would it be?)."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise ConfigError(f"bad {what} {value!r}: use an aware datetime, as datetime.now(timezone.utc)")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ConfigError(
            f"bad {what} {value!r}: a naive datetime has no time zone; give one, as "
            "datetime(..., tzinfo=timezone.utc) or datetime.now(timezone.utc)"
        )
    return value.timestamp()


def _archived(row: Row) -> ArchivedMessage:
    return ArchivedMessage(
        msg_id=int(row["msg_id"]),
        read_ct=int(row["read_ct"]),
        enqueued_at=_utc(row["enqueued_at"]),
        vt=_utc(row["vt"]),
        archived_at=_utc(row["archived_at"]),
        message=_json_value(row["message"]),
        headers=_json_value(row["headers"]),
        reason=None if row["reason"] is None else str(row["reason"]),
    )


class _TypeChanged(Exception):
    """A send found the queue's type changed since it checked its messages: check them again."""


def _check_type(known: QueueType, queue: str, rows: list[dict[str, Any]]) -> None:
    """Every message against the queue's type, before anything is written (PayloadInvalid)."""
    if known.text is None or (len(rows) > 1 and known.fits_all([row["message"] for row in rows])):
        return
    for index, row in enumerate(rows):
        which = "message" if len(rows) == 1 else f"message {index} of {len(rows)}"
        known.check(row["message"], f"{which} does not match the type of queue {queue!r}: ")


def _utc_text(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")


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


__all__ = ["ArchivedMessage", "Message", "MessageQueue", "QueueInfo", "QueueMetrics"]
