"""The operations of bounded job queues (batchq.policy.bounds): a queue's bound, its waiting jobs, and
failing the oldest of them. Statements in ``sql/<dialect>/bounds.sql``.

Each read may run on ``conn``, the application's connection, inside its transaction (an enqueue
with ``conn=``); without it, on the store's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.stored import Row, stored_count
from .base import Store


@dataclass(frozen=True)
class Bound:
    max_length: int
    overflow: str  # "drop_oldest" or "reject"


def stored_bound(row: Row | None) -> Bound | None:
    """A bound as stored. A row written by hand with an unknown policy drops oldest; one whose
    max_length is no whole number (SQLite takes any text) reads as 0: every write is refused,
    with an error that names the bound, rather than ignored."""
    if row is None or row["max_length"] is None:
        return None
    return Bound(stored_count(row["max_length"]), "reject" if row["overflow"] == "reject" else "drop_oldest")


class BoundStore(Store):
    """Bounds: the max_length and overflow of a queue's ``batchq_queue`` row."""

    def bound(self, queue: str, conn: Any = None) -> Bound | None:
        """``queue``'s bound (None: unbounded), as producers cache it."""
        return stored_bound(self.db.fetchone("queue_bound", {"queue": queue}, conn))

    def lock(self, queue: str, conn: Any = None) -> Bound | None:
        """Lock the queue's row (bounded producers of one queue take turns) and read its bound
        as it stands; inside a transaction."""
        return stored_bound(self.db.fetchone("queue_bound_lock", {"queue": queue}, conn))

    def set(self, queue: str, max_length: int | None, overflow: str | None) -> None:
        """Set or lift (None) a queue's bound."""
        params = {"queue": queue, "max_length": max_length, "overflow": overflow}
        self.db.execute("queue_bound_set", params)

    def waiting(self, queue: str, conn: Any = None) -> int:
        """How many jobs wait in ``queue`` (ready, scheduled, blocked): what its bound limits."""
        row = self.db.fetchone("queue_waiting_count", {"queue": queue}, conn)
        return 0 if row is None else int(row["waiting"])

    def oldest_waiting(self, queue: str, count: int, conn: Any = None) -> list[int]:
        """The ids of the ``count`` oldest waiting jobs of ``queue`` (read without locks)."""
        rows = self.db.fetchall("queue_overflow_victims", {"queue": queue, "n": count}, conn)
        return [int(row["id"]) for row in rows]

    def drop(self, ids: Sequence[int], error: str, fingerprint: str, conn: Any = None) -> int:
        """Fail the jobs ``ids`` that still wait, with ``error`` as their last error; how many."""
        params = {"ids": list(ids), "error": error, "fingerprint": fingerprint}
        return self.db.execute("jobs_drop_overflow", params, conn)
