"""The archive: archived messages read a page at a time, and pruned by age."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..backends.appconn import takes_app_conn
from ..core.config import check_queue_name, parse_duration
from ..errors import ConfigError
from .checks import _epoch
from .core import MAX_QTY, OVERFLOW_REASON, MessageQueueCore, Seconds
from .records import ArchivedMessage, _archived

# Rows per prune statement, each its own transaction: a batch holds its row locks for a few
# milliseconds (archivers and other prunes never wait long) and writes a bounded amount of
# undo/WAL, however large the archive.
PRUNE_BATCH = 1000


class Archive(MessageQueueCore):
    @takes_app_conn
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
        rows = self.backend.stores.messages.archived(
            queue,
            after_id=after_id,
            limit=limit,
            since=_epoch(since, "since"),
            until=_epoch(until, "until"),
            reason=reason,
            conn=conn,
        )
        if not rows:
            self._existing(queue, conn)
        return [_archived(row) for row in rows]

    def prune_archive(
        self, older_than: Seconds, *, queue: str | None = None, batch: int = PRUNE_BATCH
    ) -> int:
        """Delete archived messages archived more than ``older_than`` ago (of one queue, or of
        all), ``batch`` rows per transaction, oldest first; returns how many."""
        seconds = parse_duration(older_than, "older_than")
        name = None if queue is None else check_queue_name(queue)
        if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 100_000:
            raise ConfigError(f"bad batch {batch!r}: use a whole number of rows from 1 to 100000")
        return self.backend.stores.messages.prune_archive(seconds, name, batch)
