"""The message queue's operations (batchq.mq): a queue's registration, sent counter and type,
sending, reading and popping, a message after reading, and the archive. Statements in
``sql/<dialect>/mq.sql`` (and, for what `batchq consume` archives, ``pubsub.sql``).

Every method that may run in the application's transaction takes ``conn`` (what batchq.backends.appconn
made of what it holds); without it, the store's own connection. A method with several
statements that must be atomic (a read on MySQL, a pop that archives) is run in a transaction
of its own, retried, when it has no ``conn``; the others run where they are called (in the
feature's transaction, or in autocommit). Messages come back as rows: batchq.mq.records reads
them, and shows a value written around batchq as its text.

Dialects: SQLite and PostgreSQL read and pop with one UPDATE/DELETE ... RETURNING, which
PostgreSQL runs in autocommit (one statement is atomic: BEGIN and COMMIT only add round trips)
and SQLite in BEGIN IMMEDIATE (PostgreSQLMessageStore); MySQL has no RETURNING: it locks the
rows, then marks or deletes them, and on a server without SKIP LOCKED waits for rows others
have locked rather than passing them over (MySQLMessageStore). Only PostgreSQL has non-durable
(UNLOGGED) queues.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from ..core.stored import Row
from .base import Store
from .bounds import Bound, stored_bound

T = TypeVar("T")
# A full drop_oldest queue's victims: the waiting ones (no consumer holds them) that nobody has
# locked, else any that nobody has locked, else wait for the locked ones.
VICTIMS = ("mq_overflow_victims", "mq_overflow_victims_any", "mq_overflow_victims_wait")


@dataclass(frozen=True)
class SendSettings:
    """A queue's send settings as a send reads them from its counter shard (locked)."""

    bound: Bound | None  # None: unbounded
    durable: bool  # False: PostgreSQL's UNLOGGED table


class MessageStore(Store):
    """Message queues: rows of ``batchq_mq_meta``, ``batchq_mq_sent``, ``batchq_message`` and
    ``batchq_message_archive``, by queue name."""

    unlogged_queues: ClassVar[bool] = False  # create_queue(durable=False): PostgreSQL only

    # -- a queue: registration, settings, type ------------------------------------------

    def create(self, queue: str, conn: Any = None) -> bool:
        """Register ``queue``; False when it is registered already."""
        return self.db.execute("mq_queue_create", {"queue": queue}, conn) == 1

    def create_counter(
        self,
        queue: str,
        *,
        max_length: int | None,
        overflow: str | None,
        durable: bool,
        shards: int,
        conn: Any = None,
    ) -> None:
        """The shards of a new queue's sent counter, each with the queue's send settings."""
        settings = {"queue": queue, "max_length": max_length, "overflow": overflow, "durable": durable}
        rows = [{**settings, "shard": shard} for shard in range(shards)]
        self.db.insert_many("mq_sent_shard_create", rows, conn)

    def queue(self, queue: str, conn: Any = None) -> Row | None:
        """A queue's registration and send settings (queue_name, created_at, max_length,
        overflow, durable) as stored; None when there is no such queue."""
        return self.db.fetchone("mq_queue_get", {"queue": queue}, conn)

    def exists(self, queue: str, conn: Any = None) -> bool:
        return self.queue(queue, conn) is not None

    def queues(self) -> list[Row]:
        """Every queue's row as ``queue`` gives it, by name."""
        return self.db.fetchall("mq_queue_list")

    def configure(self, queue: str, max_length: int | None, overflow: str | None, conn: Any = None) -> bool:
        """Set (None: lift) a queue's bound on every counter shard, whose row locks wait out the
        sends in flight; False when there is no such queue."""
        params = {"queue": queue, "max_length": max_length, "overflow": overflow}
        return self.db.execute("mq_queue_configure", params, conn) != 0

    def lock(self, queue: str, conn: Any = None) -> bool:
        """Lock a queue's registration row (bounded sends take turns on it, a binding waits out a
        drop); False when there is no such queue. Inside a transaction."""
        return self.db.fetchone("mq_queue_lock", {"queue": queue}, conn) is not None

    def length(self, queue: str, conn: Any = None) -> int:
        """Messages in the queue, held or not: what a bound limits."""
        row = self.db.fetchone("mq_queue_length", {"queue": queue}, conn)
        assert row is not None  # an aggregate always returns a row
        return int(row["length"])

    def schema(self, queue: str, conn: Any = None) -> Row | None:
        """The queue's row with its type as stored (payload_schema; NULL: untyped); None when
        there is no such queue."""
        return self.db.fetchone("mq_queue_schema", {"queue": queue}, conn)

    def set_counter_schema(self, queue: str, schema_hash: int, conn: Any = None) -> bool:
        """The type's hash on every counter shard (later sends check against it); False when there
        is no such queue."""
        params = {"queue": queue, "schema_hash": schema_hash}
        return self.db.execute("mq_sent_set_schema", params, conn) != 0

    def set_schema(self, queue: str, schema: str | None, conn: Any = None) -> None:
        """The queue's type, as JSON Schema text (None: untyped)."""
        self.db.execute("mq_queue_set_schema", {"queue": queue, "schema": schema}, conn)

    def messages_page(self, queue: str, after: int, limit: int) -> list[Row]:
        """Up to ``limit`` of the queue's messages (msg_id, message) past id ``after``, by id: a
        page of the check of a new type (batchq.policy.typed.count_mismatched)."""
        return self.db.fetchall("mq_queue_messages", {"queue": queue, "after": after, "limit": limit})

    def drop_counter(self, queue: str, conn: Any = None) -> None:
        """drop_queue, first: the sent counter, whose row locks wait out sends in flight."""
        self.db.execute("mq_queue_drop_sent", {"queue": queue}, conn)

    def drop_registration(self, queue: str, conn: Any = None) -> bool:
        """drop_queue: the registration; False when there was none."""
        return self.db.execute("mq_queue_drop_meta", {"queue": queue}, conn) == 1

    def drop_messages(self, queue: str, conn: Any = None) -> None:
        self.db.execute("mq_queue_drop_messages", {"queue": queue}, conn)

    def drop_archive(self, queue: str, conn: Any = None) -> None:
        self.db.execute("mq_queue_drop_archive", {"queue": queue}, conn)

    def purge(self, queue: str, conn: Any = None) -> int:
        """Delete every message of a queue, held or not; how many. The archive stays."""
        return self.db.execute("mq_purge", {"queue": queue}, conn)

    def metrics(self, queue: str) -> Row:
        """The queue's figures as stored (queue_length, queue_visible_length, oldest and newest
        message ages, total_messages, scrape_time)."""
        row = self.db.fetchone("mq_metrics", {"queue": queue})
        assert row is not None  # an aggregate always returns a row
        return row

    # -- sending ------------------------------------------------------------------------------

    def check_send_sizes(self, rows: Sequence[dict[str, Any]], conn: Any = None) -> None:
        """PayloadError, before anything is written, if a message's statement is more than the
        server accepts (MySQL's max_allowed_packet)."""
        self.db.check_statement_sizes("mq_send", rows, conn)

    def send_settings(self, queue: str, shard: int, conn: Any = None) -> SendSettings | None:
        """Lock one shard of the queue's sent counter and read the send settings as they stand;
        None when there is no such queue."""
        row = self.db.fetchone("mq_send_settings", {"queue": queue, "shard": shard}, conn)
        if row is None:
            return None
        return SendSettings(stored_bound(row), row["durable"] is None or bool(row["durable"]))

    def count_sent(self, queue: str, shard: int, n: int, schema_hash: int, conn: Any = None) -> bool:
        """Add ``n`` to a shard of the sent counter if the queue's type hash is still
        ``schema_hash``; False when it is not (or there is no such queue)."""
        params = {"queue": queue, "shard": shard, "n": n, "schema_hash": schema_hash}
        return self.db.execute("mq_count_sent", params, conn) == 1

    def insert(self, rows: Sequence[dict[str, Any]], *, durable: bool, conn: Any = None) -> list[int]:
        """Write messages (rows of queue, message, headers, delay, at); their ids, in order. A
        non-durable queue's go to the UNLOGGED table, and batchq's own transaction (no ``conn``)
        then commits without waiting for the WAL flush; the caller's never does."""
        if durable:
            return [self.db.insert("mq_send", row, conn) for row in rows]
        if conn is None:
            self.db.execute("mq_send_async_commit", None, conn)
        return [self.db.insert("mq_send_unlogged", row, conn) for row in rows]

    def drop_oldest(self, queue: str, excess: int, reason: str, conn: Any = None) -> int:
        """Archive with ``reason`` and delete the ``excess`` oldest messages, waiting ones (no
        consumer holds them) first; how many. Inside the send's (or configure's) transaction."""
        dropped = 0
        while excess > 0:
            params = {"queue": queue, "n": excess}
            victims: list[Row] = []
            for name in self._victim_queries():
                victims = self.db.fetchall(name, params, conn)
                if victims:
                    break
            if not victims:
                break  # the queue emptied meanwhile
            for victim in victims:
                moved = {"queue": queue, "id": victim["id"], "read_ct": None, "reason": reason}
                self.db.execute("mq_archive_copy", moved, conn)
                dropped += self.db.execute("mq_delete", moved, conn)
            excess -= len(victims)  # fewer than asked: the next pass takes held or locked ones
        return dropped

    def _victim_queries(self) -> Sequence[str]:
        """Messages other transactions have locked are passed over while others can go."""
        return VICTIMS

    # -- reading and popping ------------------------------------------------------------------

    def read(
        self,
        queue: str,
        *,
        vt: float,
        qty: int,
        where: str | None = None,
        where_paths: str | None = None,
        grouped: bool = False,
        conn: Any = None,
    ) -> list[Row]:
        """Hide up to ``qty`` visible messages for ``vt`` seconds, oldest first, and count the
        read: rows of msg_id, read_ct, enqueued_at, vt, message, headers, in no set order.
        ``where``: JSON text the messages must contain (``where_paths``: its paths, as JSON,
        for MySQL); ``grouped``: the oldest message of up to ``qty`` groups (read_grouped_head)."""
        params = {"queue": queue, "vt": vt, "qty": qty, "where": where, "where_paths": where_paths}
        query = "mq_read_grouped" if grouped else "mq_read"
        if conn is not None:
            return self._read(query, params, conn)
        return self.db.retrying(lambda: self._alone(lambda: self._read(query, params, None)))

    def _read(self, query: str, params: dict[str, Any], conn: Any) -> list[Row]:
        return self.db.fetchall(query, params, conn)

    def pop(
        self,
        queue: str,
        qty: int,
        *,
        convert: Callable[[Row], T],
        unreadable: Callable[[Row, T], str | None],
        conn: Any = None,
    ) -> list[T]:
        """Delete up to ``qty`` of the oldest visible messages and give each as ``convert``
        makes it of its row. One that ``unreadable`` gives a reason for is archived with it, in
        the pop's transaction: failing would roll it back to the queue's head."""

        def popped(conn: Any) -> list[T]:
            found = []
            for row in self._pop({"queue": queue, "qty": qty}, conn):
                message = convert(row)
                reason = unreadable(row, message)
                if reason is not None:
                    kept = {key: row[key] for key in ("vt", "read_ct", "enqueued_at", "message", "headers")}
                    self.archive_popped(queue, row["msg_id"], kept, reason, conn)
                found.append(message)
            return found

        if conn is not None:
            return popped(conn)
        return self.db.retrying(lambda: self._alone(lambda: popped(None)))

    def _pop(self, params: dict[str, Any], conn: Any) -> list[Row]:
        return self.db.fetchall("mq_pop", params, conn)

    def _alone(self, action: Callable[[], T]) -> T:
        """A read or pop with no caller's transaction: in a transaction of its own (SQLite's
        BEGIN IMMEDIATE; MySQL locks, then marks)."""
        with self._taking():
            return action()

    def _taking(self) -> AbstractContextManager[None]:
        return self.db.transaction()

    def archive_popped(
        self, queue: str, msg_id: int, row: dict[str, Any], reason: str, conn: Any = None
    ) -> None:
        """A popped message (deleted already) into the archive with ``reason``; ``row``: its vt,
        read_ct, enqueued_at, message and headers, as the archive stores them."""
        self.db.execute("mq_archive_popped", {**row, "id": msg_id, "queue": queue, "reason": reason}, conn)

    # -- a message after reading --------------------------------------------------------------

    def message(self, queue: str, msg_id: int, conn: Any = None) -> Row | None:
        """A message's row as it stands (msg_id, read_ct, enqueued_at, vt, message, headers),
        nothing changed; None when there is none."""
        return self.db.fetchone("mq_message_get", {"queue": queue, "id": msg_id}, conn)

    def delete(self, queue: str, msg_id: int, read_ct: int | None = None, conn: Any = None) -> bool:
        """Delete a message; False when it is gone, or (``read_ct``, a receipt) read since."""
        params = {"queue": queue, "id": msg_id, "read_ct": read_ct}
        return self.db.execute("mq_delete", params, conn) == 1

    def archive(self, queue: str, msg_id: int, read_ct: int | None = None, conn: Any = None) -> bool:
        """Move a message to the archive (a consumer's: no reason); False when it is gone, read
        since (``read_ct``), or another archiver has it. Inside a transaction."""
        params = {"queue": queue, "id": msg_id, "read_ct": read_ct}
        if self.db.fetchone("mq_message_lock", params, conn) is None:  # locked: one archiver copies it
            return False
        self.db.execute("mq_archive_copy", {**params, "reason": None}, conn)
        return self.db.execute("mq_delete", params, conn) == 1

    def archive_mismatched(
        self, queue: str, msg_id: int, read_ct: int | None, reason: str, conn: Any = None
    ) -> None:
        """A message read that cannot be read or does not match the queue's type: into the
        archive with ``reason``, if the reader's hold (``read_ct``) still stands. Inside a transaction."""
        params = {"queue": queue, "id": msg_id, "read_ct": read_ct, "reason": reason}
        if self.db.fetchone("mq_message_lock", params, conn) is not None:  # our hold still stands
            self.db.execute("mq_archive_invalid", params, conn)
            self.db.execute("mq_delete", params, conn)

    def archive_failed(self, queue: str, msg_id: int, read_ct: int, error: str, conn: Any = None) -> bool:
        """A message `batchq consume` gave up on: into the archive with its handler's ``error``;
        False when someone has read it since (``read_ct``) or it is gone. Inside a transaction."""
        params = {"queue": queue, "id": msg_id, "read_ct": read_ct, "error": error}
        if self.db.fetchone("mq_message_lock", params, conn) is None:
            return False
        self.db.execute("pubsub_archive_copy_error", params, conn)
        return self.db.execute("mq_delete", params, conn) == 1

    def set_vt(
        self,
        queue: str,
        msg_id: int,
        *,
        delay: float | None,
        at: float | None,
        read_ct: int | None = None,
        conn: Any = None,
    ) -> Row | None:
        """Hide a message for ``delay`` seconds from now, or until ``at`` (Unix seconds; past:
        now); its row as it then stands, None when it is gone or read since (``read_ct``)."""
        params = {"queue": queue, "id": msg_id, "read_ct": read_ct, "vt": delay, "at": at}
        if self.db.execute("mq_set_vt", params, conn) != 1:
            return None
        return self.db.fetchone("mq_message_get", params, conn)

    def cancel(self, queue: str, msg_id: int) -> bool:
        """Delete a message no consumer holds (visible, or delayed and never read); False when
        it is held or gone."""
        params = {"queue": queue, "id": msg_id}
        return self.db.retrying(lambda: self.db.execute("mq_cancel", params)) == 1

    def held(self, queue: str, msg_id: int) -> float | None:
        """Seconds a reader still holds a message (0: no reader does: visible, or delayed and
        never read); None when it is gone."""
        row = self.db.fetchone("mq_hold", {"queue": queue, "id": msg_id})
        if row is None:
            return None
        seconds = float(row["held_seconds"])
        return seconds if seconds > 0 and int(row["read_ct"]) > 0 else 0.0

    # -- the archive ----------------------------------------------------------------------------

    def archived(
        self,
        queue: str,
        *,
        after_id: int,
        limit: int,
        since: float | None = None,
        until: float | None = None,
        reason: str | None = None,
        conn: Any = None,
    ) -> list[Row]:
        """A page of the queue's archive in id order after ``after_id``: rows of msg_id, read_ct,
        enqueued_at, vt, archived_at, message, headers, reason. ``since``/``until``: Unix seconds."""
        params = {
            "queue": queue,
            "after_id": after_id,
            "limit": limit,
            "since": since,
            "until": until,
            "reason": reason,
        }
        return self.db.fetchall("mq_archive_read", params, conn)

    def prune_archive(self, older_than: float, queue: str | None, batch: int) -> int:
        """Delete archived messages older than ``older_than`` seconds (of ``queue``, or all),
        ``batch`` rows per transaction, oldest first; how many."""
        params = {"older_than": older_than, "queue": queue, "batch": batch}
        pruned = 0
        while True:
            deleted = self.db.retrying(lambda: self.db.execute("mq_archive_prune", params))
            pruned += deleted
            if deleted < batch:
                return pruned

    def failed(self, queue: str, limit: int) -> list[Row]:
        """The newest messages of ``queue`` that `batchq consume` archived with an error: rows of
        msg_id, read_ct, enqueued_at, archived_at, message, headers, error."""
        return self.db.fetchall("pubsub_archive_failures", {"queue": queue, "limit": limit})


class PostgreSQLMessageStore(MessageStore, dialect="postgresql"):
    unlogged_queues = True

    def _taking(self) -> AbstractContextManager[None]:
        """A read or pop is one statement, atomic in autocommit: BEGIN and COMMIT would only add
        two round trips (single-row reads measured 1.2-1.7x faster without, on a loaded host)."""
        return nullcontext()


class MySQLMessageStore(MessageStore, dialect="mysql"):
    """No UPDATE ... RETURNING: a read locks its rows, then marks them (a pop deletes them), in
    one transaction. A server without SKIP LOCKED (or a URL's skip_locked=off) waits for the
    rows others have locked."""

    def _read(self, query: str, params: dict[str, Any], conn: Any) -> list[Row]:
        rows = self.db.fetchall(query if self.db.skip_locked else query + "_no_skip", params, conn)
        if rows:  # locked above, marked here
            ids = [row["msg_id"] for row in rows]
            self.db.execute("mq_read_mark", {**params, "ids": ids, "until": rows[0]["vt"]}, conn)
        return rows

    def _pop(self, params: dict[str, Any], conn: Any) -> list[Row]:
        rows = self.db.fetchall("mq_pop" if self.db.skip_locked else "mq_pop_no_skip", params, conn)
        if rows:
            self.db.execute("mq_pop_mark", {**params, "ids": [row["msg_id"] for row in rows]}, conn)
        return rows

    def _victim_queries(self) -> Sequence[str]:
        return VICTIMS if self.db.skip_locked else VICTIMS[-1:]
